// Package jsonvalue reads and writes the JSON values runner keeps (items,
// captures, results): integers stay integers, and bytes that are not UTF-8
// survive the trip as \udc80-\udcff escapes.
//
// Decode reads one value with integers as int64 and other numbers as
// float64, as expressions and interpolation expect them; EncodeString writes
// a string whose invalid bytes become those escapes, which Decode turns back
// into the bytes; NormalizeNumbers converts the json.Number values of a
// decoder that used UseNumber:
//
//	raw := jsonvalue.EncodeString("caf\xe9.txt") // "caf\udce9.txt"
//	v, err := jsonvalue.Decode(raw)              // "caf\xe9.txt" again
package jsonvalue
