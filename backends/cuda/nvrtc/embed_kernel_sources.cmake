# Build-time script: writes OUTPUT, a C++ file holding every kernel source file as a byte array,
# so that the library never looks for .cu files at run time. INPUTS is a '|'-separated list of
# NAME=PATH entries; NAME is what kernels #include and what FindKernelSource looks up.
#   cmake -DOUTPUT=file.cc -DINPUTS=gemv.cu=/src/gemv.cu|quant/block_layout.h=/src/q.h -P ...
string(REPLACE "|" ";" _inputs "${INPUTS}")
list(SORT _inputs)
set(_arrays "")
set(_table "")
set(_i 0)
foreach(_entry IN LISTS _inputs)
  string(FIND "${_entry}" "=" _eq)
  string(SUBSTRING "${_entry}" 0 ${_eq} _name)
  math(EXPR _after "${_eq} + 1")
  string(SUBSTRING "${_entry}" ${_after} -1 _path)
  file(READ "${_path}" _hex HEX)
  string(LENGTH "${_hex}" _hex_len)
  math(EXPR _size "${_hex_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  # Break the initializer into lines of 24 bytes to keep the file readable by tools.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n    " _bytes "${_bytes}")
  string(APPEND _arrays "const unsigned char kFile${_i}[] = {\n    ${_bytes}0x00};\n")
  string(APPEND _table "    {\"${_name}\", std::string_view(reinterpret_cast<const char*>(kFile${_i}), ${_size})},\n")
  math(EXPR _i "${_i} + 1")
endforeach()
file(WRITE "${OUTPUT}.tmp"
"// Generated at build time by backends/cuda/nvrtc/embed_kernel_sources.cmake. Do not edit.\n"
"#include \"backends/cuda/nvrtc/kernel_sources.h\"\n\n"
"namespace jllm::cuda {\nnamespace {\n\n"
"${_arrays}\n"
"const KernelSourceFile kFiles[] = {\n${_table}};\n\n"
"}  // namespace\n\n"
"absl::Span<const KernelSourceFile> KernelSourceFiles() { return kFiles; }\n\n"
"}  // namespace jllm::cuda\n")
# Only touch OUTPUT when it changed, so unrelated kernel edits do not rebuild dependents twice.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
