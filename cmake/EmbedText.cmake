# cmake -DIN=file -DOUT=file.c -DNAME=symbol -DHEADER=x.h -P EmbedText.cmake
# Writes a C file defining `const char NAME[]` (NUL-terminated) and
# `const size_t NAME_len` with the bytes of IN, so a template ships inside
# the program and cannot go missing at run time.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
       "\\1\n\t" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by cmake/EmbedText.cmake. */\n"
  "#include \"${HEADER}\"\n\n"
  "const char ${NAME}[] = {\n\t${bytes}0x00\n};\n"
  "const size_t ${NAME}_len = ${len};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
