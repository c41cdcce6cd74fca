package jsonvalue_test

import (
	"fmt"

	"github.com/runnerdev/runner/internal/jsonvalue"
)

// A file name in Latin-1 keeps its byte through JSON.
func Example() {
	raw := jsonvalue.EncodeString("caf\xe9.txt")
	fmt.Println(string(raw))
	v, err := jsonvalue.Decode(raw)
	fmt.Printf("%q %v\n", v, err)
	n, _ := jsonvalue.Decode([]byte(`[3, 2.5]`))
	fmt.Printf("%T %T\n", n.([]any)[0], n.([]any)[1])
	// Output:
	// "caf\udce9.txt"
	// "caf\xe9.txt" <nil>
	// int64 float64
}
