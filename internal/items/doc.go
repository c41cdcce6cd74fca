// Package items turns a map phase's input into its items: the input
// formats (a JSON document or array, JSON Lines, plain lines), filter,
// sort_by, distinct, offset, max_items and item ids, written once per job to
// its items file and read back from there.
//
// Load reads the input, recognising its format from its first bytes, runs
// it through the map phase's pipeline (item_id templates expanded in the
// given Scope) and writes the items file; a resumed job never reads the
// input again but the file, with Count and Read, each Item with its Index,
// ID, Raw JSON and decoded Value:
//
//	n, err := items.Load(input, wf.Map, scope, path)
//	err = items.Read(path, func(it *items.Item) (bool, error) {
//		fmt.Println(it.Index, it.ID)
//		return true, nil // go on
//	})
package items
