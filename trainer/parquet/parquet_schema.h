// The parquet schema walk: the footer's depth-first list of schema elements into the leaf
// columns, each with its dotted path, definition and repetition levels and logical annotation.
// Linear in the number of elements, depth capped at kMaxSchemaDepth (Arrow's limit).
#pragma once

#include <vector>

#include "schema/status.h"
#include "trainer/parquet/parquet_file.h"
#include "trainer/parquet/thrift_compact.h"

namespace baton::parquet {

constexpr int kMaxSchemaDepth = 100;

// `schema` is FileMetaData.schema (a Thrift list). kData, without the file's name, for a
// malformed schema; annotations that cannot be read are left in ColumnDesc::refused so that
// only their own columns are refused.
Status ReadSchema(const ThriftValue& schema, std::vector<ColumnDesc>* columns);

}  // namespace baton::parquet
