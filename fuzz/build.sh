#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined; Debian's clang and
# libclang-rt-14-dev, scripts/setup.sh) straight from the sources they cover, into OUT_DIR
# (default build-fuzz/): parquet_file_fuzzer, thrift_fuzzer, safetensors_fuzzer, torch_save_fuzzer.
# Usage: fuzz/build.sh [OUT_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-fuzz}
mkdir -p "$out/obj"
cxx=${CXX_FUZZ:-clang++}
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined
       -fno-sanitize-recover=undefined -I"$src")
libs=(-lsnappy -lzstd -lz -llz4 -lbrotlidec -lbrotlicommon)
compile() {  # source -> object, rebuilt when the source or any header it may include is newer
  local s=$1 o=$out/obj/$(echo "$1" | tr / _).o
  if [ ! -f "$o" ] || [ -n "$(find "$src/$s" "$src/trainer/parquet" "$src/trainer/lerobot" "$src/schema" -newer "$o" -name '*.[ch]*' | head -1)" ]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src/$s" -o "$o"
  fi
  echo "$o"
}
parquet=(trainer/parquet/thrift_compact.cc trainer/parquet/rle_hybrid.cc trainer/parquet/parquet_codec.cc
         trainer/parquet/value_decoders.cc trainer/parquet/parquet_schema.cc trainer/parquet/parquet_file.cc
         trainer/parquet/column_chunk_reader.cc schema/status.cc)
link() {  # target sources...
  local t=$1; shift
  local objs=()
  for s in "$@"; do objs+=("$(compile "$s")"); done
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "${objs[@]}" -o "$out/$t" "${libs[@]}"
}
link parquet_file_fuzzer fuzz/parquet_file_fuzzer.cc "${parquet[@]}"
link thrift_fuzzer fuzz/thrift_fuzzer.cc trainer/parquet/thrift_compact.cc schema/status.cc
link safetensors_fuzzer fuzz/safetensors_fuzzer.cc schema/safetensors.cc schema/safetensors_write.cc \
  schema/atomic_file.cc schema/status.cc
link torch_save_fuzzer fuzz/torch_save_fuzzer.cc trainer/lerobot/pickle_scan.cc trainer/lerobot/pickle_names.cc \
  trainer/lerobot/pickle_torch_values.cc trainer/lerobot/stored_zip.cc schema/status.cc
echo "fuzz: targets in $out"
