# Turns each file of web_static/ into a byte array in one generated header
# (hm_web.h), so the web viewer travels inside the htamerge binary and
# needs no install step. Run by query/CMakeLists.txt:
#   cmake -DOUT=hm_web.h -DROOT=web_static -DFILES=a,b,... -P embed_web.cmake
set(body "/* Generated from web_static/ by query/embed_web.cmake. Do not edit. */\n#ifndef HM_WEB_H\n#define HM_WEB_H\n#include <stddef.h>\n")
set(table "")
set(i 0)
string(REPLACE "," ";" FILES "${FILES}")
list(SORT FILES)
foreach(f ${FILES})
  if(f STREQUAL "")
    continue()
  endif()
  file(RELATIVE_PATH rel ${ROOT} ${f})
  file(READ ${f} hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR len "${n} / 2")
  # 32 bytes a line keeps the generated file readable by a compiler's error output.
  string(REGEX REPLACE "(................................................................)" "\\1\n" hex "${hex}")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const unsigned char hm_web_${i}[] = {\n${bytes}0};\n")
  string(APPEND table "    {\"/${rel}\", hm_web_${i}, ${len}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "static const struct hm_web_file {\n    const char *path;\n    const unsigned char *data;\n    size_t len;\n} hm_web_files[] = {\n${table}    {NULL, NULL, 0},\n};\n#endif\n")
file(WRITE ${OUT} "${body}")
