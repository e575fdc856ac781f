# SPDX-License-Identifier: BSD-3-Clause
# cmake -DDOC=docs/api.md -DEXAMPLE=examples/linear_layer.cpp -P check_doc_example.cmake: fails
# unless the first ```cpp block after the "## Example" heading of DOC is EXAMPLE's text.
file(READ ${DOC} doc)
file(READ ${EXAMPLE} example)
string(FIND "${doc}" "## Example\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} has no '## Example' section")
endif()
string(SUBSTRING "${doc}" ${at} -1 doc)
string(FIND "${doc}" "```cpp\n" open)
string(LENGTH "```cpp\n" skip)
math(EXPR open "${open} + ${skip}")
string(SUBSTRING "${doc}" ${open} -1 doc)
string(FIND "${doc}" "```\n" close)
string(SUBSTRING "${doc}" 0 ${close} block)
if(NOT block STREQUAL example)
  message(FATAL_ERROR "The example in ${DOC} differs from ${EXAMPLE}: copy the file into the document")
endif()
