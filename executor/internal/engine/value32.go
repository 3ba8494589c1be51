//go:build 386 || arm

package engine

import (
	"math"
	"unsafe"

	lib "modernc.org/libquickjs"
)

// The layout of a JSValue on 32-bit targets: NaN-boxed in 64 bits (see
// modernc.org/quickjs's quickjs32.go).

const valueSize = unsafe.Sizeof(lib.TJSValue(0))

var (
	null      = lib.TJSValue(uint64(lib.EJS_TAG_NULL) << 32)
	undefined = lib.TJSValue(uint64(lib.EJS_TAG_UNDEFINED) << 32)
	exception = lib.TJSValue(uint64(lib.EJS_TAG_EXCEPTION) << 32)
)

const float64TagAddend = 0x7ff80000 - lib.EJS_TAG_FIRST + 1

const nanValue = 0x7ff8000000000000 - (float64TagAddend << 32)

func tagOf(v lib.TJSValue) int32 {
	r := int32(v >> 32)
	if uint32(r)-uint32(int32(lib.EJS_TAG_FIRST)) >= lib.EJS_TAG_FLOAT64-lib.EJS_TAG_FIRST {
		r = lib.EJS_TAG_FLOAT64
	}
	return r
}

func mkFloat(f float64) lib.TJSValue {
	u := math.Float64bits(f)
	if u&0x7fffffffffffffff > 0x7ff0000000000000 {
		return lib.TJSValue(int64(nanValue))
	}
	return lib.TJSValue(u - uint64(float64TagAddend)<<32)
}

func mkInt32(n int32) lib.TJSValue {
	return lib.TJSValue(uint64(uint32(lib.EJS_TAG_INT))<<32 | uint64(uint32(n)))
}

func mkBool(b bool) lib.TJSValue {
	v := lib.TJSValue(uint64(lib.EJS_TAG_BOOL) << 32)
	if b {
		v |= 1
	}
	return v
}

func int32Of(v lib.TJSValue) int32 { return int32(v) }

func float64Of(v lib.TJSValue) float64 {
	return math.Float64frombits(uint64(v) + float64TagAddend<<32)
}
