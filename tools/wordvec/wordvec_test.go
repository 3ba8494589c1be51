package wordvec

import (
	"bytes"
	"testing"
)

func cos(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / (sqrt(na) * sqrt(nb))
}

func sqrt(x float64) float64 {
	z := x
	for range 40 {
		z = (z + x/z) / 2
	}
	return z
}

func TestDefault(t *testing.T) {
	tb := Default()
	if tb.Dimensions() != 100 || tb.Len() < 30000 {
		t.Fatalf("table of %d words of %d dimensions", tb.Len(), tb.Dimensions())
	}
	_, r, ok := tb.Lookup("the")
	if !ok || r != 1 {
		t.Fatalf("the: rank %d, %v", r, ok)
	}
	if _, _, ok := tb.Lookup("The"); ok {
		t.Fatal("a word with a capital is in the table")
	}
	v := func(w string) []float32 {
		x, _, ok := tb.Lookup(w)
		if !ok {
			t.Fatalf("%q is not in the table", w)
		}
		return x
	}
	// Words of one meaning are closer than unrelated ones.
	if a, b := cos(v("puppy"), v("dog")), cos(v("puppy"), v("invoice")); a <= b+0.2 {
		t.Errorf("cos(puppy, dog) %.2f, cos(puppy, invoice) %.2f", a, b)
	}
	if a, b := cos(v("salary"), v("paid")), cos(v("salary"), v("garden")); a <= b+0.2 {
		t.Errorf("cos(salary, paid) %.2f, cos(salary, garden) %.2f", a, b)
	}
}

// BenchmarkRead: the cost of the first use of the table (decoding the
// embedded file), in time and heap.
func BenchmarkRead(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(gloveData)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(gloveData))/(1<<20), "embedded-MiB")
}

// BenchmarkNeighbours: the words closest to one word among the 30,000
// most frequent, as memory recall asks for each query word.
func BenchmarkNeighbours(b *testing.B) {
	t := Default()
	for b.Loop() {
		t.Neighbours("holiday", 3, 0.6, 30000)
	}
}
