//go:build !(386 || arm)

package engine

import (
	"unsafe"

	lib "modernc.org/libquickjs"
)

// The layout of a JSValue on 64-bit targets: a union and a tag.

const valueSize = unsafe.Sizeof(lib.TJSValue{})

var (
	null      = lib.TJSValue{Ftag: lib.EJS_TAG_NULL}
	undefined = lib.TJSValue{Ftag: lib.EJS_TAG_UNDEFINED}
	exception = lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION}
)

func tagOf(v lib.TJSValue) int32 { return int32(v.Ftag) }

func mkFloat(f float64) (v lib.TJSValue) {
	*(*float64)(unsafe.Pointer(&v)) = f
	v.Ftag = lib.EJS_TAG_FLOAT64
	return v
}

// mkInt32 and int32Of keep the payload in the union's value domain (see
// modernc.org/quickjs's quickjs64.go): JS_MKVAL zero-extends it.
func mkInt32(n int32) (v lib.TJSValue) {
	*(*uint64)(unsafe.Pointer(&v)) = uint64(uint32(n))
	v.Ftag = lib.EJS_TAG_INT
	return v
}

func mkBool(b bool) (v lib.TJSValue) {
	if b {
		*(*uint64)(unsafe.Pointer(&v)) = 1
	}
	v.Ftag = lib.EJS_TAG_BOOL
	return v
}

func int32Of(v lib.TJSValue) int32 { return int32(*(*uint64)(unsafe.Pointer(&v))) }

func float64Of(v lib.TJSValue) float64 { return *(*float64)(unsafe.Pointer(&v)) }
