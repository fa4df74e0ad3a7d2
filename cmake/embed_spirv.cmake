# Turns a SPIR-V binary into a C source file holding it as a uint32_t array.
# cmake -DIN=x.spv -DOUT=x.spv.c -DNAME=x[.variant] -DSYM=x[_variant] -P embed_spirv.cmake
# (NAME is the shader's table name, SYM the C identifier made from it)
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0)
  message(FATAL_ERROR "${IN}: size is not a multiple of 4 bytes")
endif()
# SPIR-V words are little-endian: bytes b0 b1 b2 b3 form the word 0xb3b2b1b0.
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n    " words "${words}")
math(EXPR nbytes "${n} / 2")
file(WRITE ${OUT} "/* Generated from ${NAME}.comp by cmake/embed_spirv.cmake. */\n#include <stddef.h>\n#include <stdint.h>\n"
  "const uint32_t ovk_spv_${SYM}[] = {\n    ${words}\n};\n"
  "const size_t ovk_spv_${SYM}_size = ${nbytes};\n")
