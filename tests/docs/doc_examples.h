// The C++ examples of docs/recipes/*.md, as the generated translation unit
// (tools/docs/extract_examples.py) hands them to the harness
// (doc_examples_main.cpp).
#pragma once

#include <span>

#include "etcd/client.h"

namespace doc_examples {

struct Example {
  const char* page;  // docs/recipes/NAME.md
  int line;          // the block's first code line
  const char* form;  // "" as written, "co_await": its waits written as co_await
  void (*run)(etcd::Client& client);
};

// Every example, in page order, then in the order of the page. Defined in
// the generated file.
std::span<const Example> all();

}  // namespace doc_examples
