package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func check(t *testing.T, history string) porcupine.CheckResult {
	t.Helper()
	var recs []record
	if err := json.Unmarshal([]byte(history), &recs); err != nil {
		t.Fatal(err)
	}
	ops, _, err := operations(recs)
	if err != nil {
		t.Fatal(err)
	}
	return porcupine.CheckOperationsTimeout(model, ops, 10*time.Second)
}

func TestOverlappingWriteMayBeSeenOrNot(t *testing.T) {
	// A read overlapping a write may return either value.
	for _, seen := range []string{`"1"`, `null`} {
		h := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":10},
		       {"client":1,"op":"read","key":"a","value":` + seen + `,"call":5,"return":6}]`
		if r := check(t, h); r != porcupine.Ok {
			t.Fatalf("read of %s: %s", seen, r)
		}
	}
}

func TestStaleReadIsIllegal(t *testing.T) {
	h := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":10},
	       {"client":0,"op":"write","key":"a","value":"2","call":11,"return":20},
	       {"client":1,"op":"read","key":"a","value":"1","call":21,"return":22}]`
	if r := check(t, h); r != porcupine.Illegal {
		t.Fatalf("a read after a completed overwrite saw the old value: %s", r)
	}
}

func TestLostAcknowledgedWriteIsIllegal(t *testing.T) {
	h := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":10},
	       {"client":1,"op":"read","key":"a","value":null,"call":11,"return":12}]`
	if r := check(t, h); r != porcupine.Illegal {
		t.Fatalf("an acknowledged write vanished: %s", r)
	}
}

func TestUnknownWriteMayApplyLateOrNever(t *testing.T) {
	// A write with no answer: absent at first, then seen, is fine; seen then gone again is not.
	ok := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":null},
	        {"client":1,"op":"read","key":"a","value":null,"call":5,"return":6},
	        {"client":1,"op":"read","key":"a","value":"1","call":7,"return":8}]`
	if r := check(t, ok); r != porcupine.Ok {
		t.Fatalf("late apply: %s", r)
	}
	never := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":null},
	           {"client":1,"op":"read","key":"a","value":null,"call":5,"return":6}]`
	if r := check(t, never); r != porcupine.Ok {
		t.Fatalf("never applied: %s", r)
	}
	flicker := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":null},
	             {"client":1,"op":"read","key":"a","value":"1","call":5,"return":6},
	             {"client":1,"op":"read","key":"a","value":null,"call":7,"return":8}]`
	if r := check(t, flicker); r != porcupine.Illegal {
		t.Fatalf("seen then gone: %s", r)
	}
}

func TestKeysAreIndependentAndDeletesCount(t *testing.T) {
	h := `[{"client":0,"op":"write","key":"a","value":"1","call":0,"return":1},
	       {"client":0,"op":"delete","key":"a","call":2,"return":3},
	       {"client":1,"op":"write","key":"b","value":"1","call":0,"return":1},
	       {"client":1,"op":"read","key":"b","value":"1","call":4,"return":5},
	       {"client":1,"op":"read","key":"a","value":null,"call":4,"return":5}]`
	if r := check(t, h); r != porcupine.Ok {
		t.Fatalf("%s", r)
	}
}

func TestMalformedHistoriesAreRefused(t *testing.T) {
	for _, h := range []string{
		`[{"client":0,"op":"cas","key":"a","call":0,"return":1}]`,
		`[{"client":0,"op":"write","key":"a","call":0,"return":1}]`,
		`[{"client":0,"op":"read","key":"a","value":null,"call":0,"return":null}]`,
		`[{"client":0,"op":"read","key":"a","value":null,"call":5,"return":1}]`,
	} {
		var recs []record
		if err := json.Unmarshal([]byte(h), &recs); err != nil {
			t.Fatal(err)
		}
		if _, _, err := operations(recs); err == nil {
			t.Fatalf("accepted %s", h)
		}
	}
}
