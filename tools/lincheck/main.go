// Command lincheck checks a history of reads and writes on a key-value service for
// linearizability with Porcupine (github.com/anishathalye/porcupine), one key at a time.
//
// Usage: lincheck HISTORY.json [VISUALIZATION.html]
//
// HISTORY.json is an array of operations:
//
//	{"client": 0, "op": "write"|"delete"|"read", "key": "k", "value": "v" or null,
//	 "call": ns, "return": ns or null}
//
// "value" is the value written, or for a read the value read (null: the key was absent).
// "return" is null for a write whose outcome is unknown (no answer, or an answer that says it
// may have been applied): it may take effect at any point after its call, or never, which a
// return at the end of time expresses. Operations known not to have happened (refused, never
// sent) and failed reads are left out of the history by the recorder.
//
// Exit status: 0 linearizable, 1 not linearizable (the visualization, when a path is given,
// shows where), 2 bad input or the check did not finish within its time limit.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

type record struct {
	Client int     `json:"client"`
	Op     string  `json:"op"`
	Key    string  `json:"key"`
	Value  *string `json:"value"`
	Call   int64   `json:"call"`
	Return *int64  `json:"return"`
}

// input is what a client asked; output what it was answered (reads only).
type input struct {
	op    string
	key   string
	value *string
}

type output struct {
	value *string
}

// state is the value of one key; nil when absent.
type state = *string

func same(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func show(v *string) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *v)
}

var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(input).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return state(nil) },
	Step: func(s, in, out interface{}) (bool, interface{}) {
		cur := s.(state)
		i := in.(input)
		switch i.op {
		case "write":
			return true, state(i.value)
		case "delete":
			return true, state(nil)
		default:
			return same(out.(output).value, cur), cur
		}
	},
	Equal: func(a, b interface{}) bool { return same(a.(state), b.(state)) },
	DescribeOperation: func(in, out interface{}) string {
		i := in.(input)
		switch i.op {
		case "write":
			return fmt.Sprintf("set %s = %s", i.key, show(i.value))
		case "delete":
			return fmt.Sprintf("delete %s", i.key)
		default:
			return fmt.Sprintf("read %s -> %s", i.key, show(out.(output).value))
		}
	},
	DescribeState: func(s interface{}) string { return show(s.(state)) },
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lincheck HISTORY.json [VISUALIZATION.html]")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var recs []record
	if err := json.Unmarshal(raw, &recs); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	ops, stats, err := operations(recs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	res, info := porcupine.CheckOperationsVerbose(model, ops, 5*time.Minute)
	fmt.Printf("lincheck: %d operations (%s): %s\n", len(ops), stats, res)
	if res != porcupine.Ok && len(os.Args) > 2 {
		if err := porcupine.VisualizePath(model, info, os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
		} else {
			fmt.Printf("lincheck: visualization in %s\n", os.Args[2])
		}
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		os.Exit(1)
	default:
		os.Exit(2)
	}
}

// operations turns the recorded history into Porcupine's operations, with a summary.
func operations(recs []record) ([]porcupine.Operation, string, error) {
	ops := make([]porcupine.Operation, 0, len(recs))
	unknown, reads, writes := 0, 0, 0
	keys := map[string]bool{}
	for n, r := range recs {
		if r.Op != "read" && r.Op != "write" && r.Op != "delete" {
			return nil, "", fmt.Errorf("operation %d: unknown op %q", n, r.Op)
		}
		if r.Op == "write" && r.Value == nil {
			return nil, "", fmt.Errorf("operation %d: a write without a value", n)
		}
		ret := int64(math.MaxInt64)
		if r.Return != nil {
			ret = *r.Return
		} else if r.Op == "read" {
			return nil, "", fmt.Errorf("operation %d: a read without an answer belongs out of the history", n)
		} else {
			unknown++
		}
		if ret < r.Call {
			return nil, "", fmt.Errorf("operation %d: returns before its call", n)
		}
		if r.Op == "read" {
			reads++
		} else {
			writes++
		}
		keys[r.Key] = true
		ops = append(ops, porcupine.Operation{
			ClientId: r.Client,
			Input:    input{op: r.Op, key: r.Key, value: r.Value},
			Call:     r.Call,
			Output:   output{value: r.Value},
			Return:   ret,
		})
	}
	stats := fmt.Sprintf("%d reads, %d writes of which %d with an unknown outcome, %d keys", reads, writes, unknown, len(keys))
	return ops, stats, nil
}
