// Package tagline writes output that several commands make at once to one
// stream without mixing it: each complete line, prefixed with a tag that
// says whose it is, in one write, as GNU parallel's --tag does. A
// partial last line waits for its newline, or for Flush.
//
//	w := tagline.New(os.Stdout, "vet\t")
//	fmt.Fprint(w, "ok\npart")
//	w.Flush() // "vet\tok\nvet\tpart\n"
//
// runner uses it for the output of map items (runner run --tag) and of the
// steps of a parallel: block on the terminal.
package tagline
