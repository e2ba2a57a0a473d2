package client

import (
	"fmt"
	"testing"
)

// The vectors of docs/architecture.md, "Decision groups".
var groupVectors = []struct {
	id     string
	hash   uint32
	g2, g4 int
}{
	{"t1", 0xc8fd0a82, 1, 3},
	{"t2", 0x4afe188a, 0, 1},
	{"order-42", 0x2e7b68d7, 0, 0},
	{"saga:payment-7", 0x5509ef8e, 0, 1},
	{"lease:relay", 0xdbf46482, 1, 3},
}

func TestGroupOfPinnedVectors(t *testing.T) {
	for _, v := range groupVectors {
		if h := PlacementHash(v.id); h != v.hash {
			t.Errorf("PlacementHash(%q) = %08x, want %08x", v.id, h, v.hash)
		}
		if g := GroupOf(v.id, 1); g != 0 {
			t.Errorf("GroupOf(%q, 1) = %d", v.id, g)
		}
		if g := GroupOf(v.id, 2); g != v.g2 {
			t.Errorf("GroupOf(%q, 2) = %d, want %d", v.id, g, v.g2)
		}
		if g := GroupOf(v.id, 4); g != v.g4 {
			t.Errorf("GroupOf(%q, 4) = %d, want %d", v.id, g, v.g4)
		}
	}
}

func TestGroupOfInRangeAndRefusesBadCounts(t *testing.T) {
	for _, g := range []int{1, 2, 3, 4, 7, 64} {
		for i := 0; i < 500; i++ {
			if x := GroupOf(fmt.Sprintf("order-%dé", i), g); x < 0 || x >= g {
				t.Fatalf("GroupOf(order-%d, %d) = %d", i, g, x)
			}
		}
	}
	for _, bad := range []int{0, -1, 65} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("GroupOf with %d groups did not panic", bad)
				}
			}()
			GroupOf("t1", bad)
		}()
	}
}
