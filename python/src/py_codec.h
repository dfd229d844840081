// A Python codec as a C++ Codec<T> (include/etcd/recipes/codec.h), so that
// the library's typed recipes (TypedQueue, TypedWorkQueue, typed caches,
// TypedTransientKeyValue) run Python's encode/decode where C++ would run its
// own: a value that does not decode is then handled by the library's rules
// — left in the queue, sent to the dead letters, kept in a cache as a node
// with an error — instead of being found bad after it was taken.
//
// The codec object is anything with encode(obj) -> bytes and
// decode(bytes) -> obj (etcd_recipes.codecs). Encoding runs on the caller's
// thread (inside enqueue, set_value, ...); decoding runs on the recipe's
// strand (the client's executor), never under a recipe's lock (the queues
// and caches decode before they lock), so taking the GIL there cannot
// deadlock with a Python thread that holds it and waits for that lock.
#pragma once

#include <string>
#include <string_view>

#include "common.h"
#include "etcd/recipes/codec.h"

namespace etcd::python {

// A decoded (or to be encoded) Python value, as the T of a typed recipe:
// copied and destroyed on any thread (SharedPy touches the reference count
// only with the GIL).
struct PyValue {
  SharedPy obj;
};

class PyCodec {
 public:
  explicit PyCodec(py::object codec) : codec_(std::move(codec)) {}

  // INVALID_ARGUMENT [bad_argument] when the codec raises or does not return
  // bytes: the recipes then write nothing.
  Result<std::string> encode(const PyValue& value) const;
  // decode_error(key, ...) (DATA_LOSS [decode_failed], naming the key) when
  // the codec raises: the recipes treat the value as poison.
  Result<PyValue> decode(std::string_view bytes, std::string_view key) const;

  const py::object& object() const { return codec_.get(); }

 private:
  SharedPy codec_;
};

// The Python object of a value (GIL held).
inline py::object to_object(const PyValue& v) { return v.obj ? v.obj.get() : py::object(py::none()); }
inline PyValue to_value(py::object o) { return PyValue{SharedPy(std::move(o))}; }

}  // namespace etcd::python
