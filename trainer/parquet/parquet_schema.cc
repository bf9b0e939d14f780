#include "trainer/parquet/parquet_schema.h"

#include <string>

namespace baton::parquet {
namespace {

// Field ids of parquet.thrift's SchemaElement.
constexpr int16_t kType = 1, kRepetition = 3, kName = 4, kNumChildren = 5, kConverted = 6,
                  kScale = 7, kPrecision = 8, kLogical = 10;
enum Repetition { kRequired = 0, kOptional = 1, kRepeated = 2 };
// The leaf paths of a schema share their ancestors' names: capped in sum so that a long name
// above many leaves cannot multiply into gigabytes.
constexpr size_t kMaxPathBytes = size_t(64) << 20;

// DECIMAL: exact when the unscaled integer is (checked per value) and 10^scale is a double.
void Decimal(int64_t scale, int64_t precision, ColumnDesc* c) {
  c->logical = "DECIMAL(" + std::to_string(precision) + "," + std::to_string(scale) + ")";
  if (c->type != PhysicalType::kInt32 && c->type != PhysicalType::kInt64) {
    c->refused = "logical type " + c->logical + " on " + PhysicalTypeName(c->type) +
                 " is not supported (DECIMAL on INT32 and INT64 only)";
  } else if (scale < 0 || scale > 22 || (precision > 0 && scale > precision)) {
    c->refused = "logical type " + c->logical + " has a scale out of range (0..22, <= precision)";
  } else {
    c->scale = int(scale);
  }
}

void Integer(int bits, bool is_signed, ColumnDesc* c) {
  c->logical = std::string(is_signed ? "INT_" : "UINT_") + std::to_string(bits);
  const int room = c->type == PhysicalType::kInt32 ? 32 : c->type == PhysicalType::kInt64 ? 64 : 0;
  if (room == 0 || (bits != 8 && bits != 16 && bits != 32 && bits != 64) || bits > room) {
    c->refused =
        "logical type " + c->logical + " on " + PhysicalTypeName(c->type) + " is not supported";
  } else {
    c->is_unsigned = !is_signed;
  }
}

void Refuse(const std::string& name, ColumnDesc* c) {
  c->logical = name;
  c->refused = "logical type " + name + " is not supported (its raw numbers are not returned)";
}

// The leaf's annotation: the LogicalType union when present (it supersedes ConvertedType), else
// the ConvertedType.
void Annotate(const ThriftValue& el, ColumnDesc* c) {
  const ThriftValue* lt = el.Field(kLogical);
  if (lt && lt->kind == ThriftValue::Kind::kStruct && lt->st && !lt->st->empty()) {
    const int16_t id = lt->st->begin()->first;
    const ThriftValue& v = lt->st->begin()->second;
    static const char* kNames[] = {
        "", "STRING",  "MAP",  "LIST", "ENUM", "",        "DATE",    "TIME",     "TIMESTAMP", "",
        "", "UNKNOWN", "JSON", "BSON", "UUID", "FLOAT16", "VARIANT", "GEOMETRY", "GEOGRAPHY"};
    if (id == 5) return Decimal(v.Int(1, 0), v.Int(2, 0), c);
    if (id == 10) {
      const ThriftValue* sign = v.Field(2);
      return Integer(int(v.Int(1, 0)), !sign || sign->i != 0, c);
    }
    if (id > 0 && id < 19 && kNames[id][0]) return Refuse(kNames[id], c);
    return Refuse("(unknown logical type, union field " + std::to_string(id) + ")", c);
  }
  const int64_t ct = el.Int(kConverted, -1);
  if (ct < 0) return;
  if (ct == 5) return Decimal(el.Int(kScale, 0), el.Int(kPrecision, 0), c);
  if (ct >= 11 && ct <= 14) return Integer(8 << (ct - 11), false, c);
  if (ct >= 15 && ct <= 18) return Integer(8 << (ct - 15), true, c);
  static const char* kConvertedNames[] = {"UTF8",
                                          "MAP",
                                          "MAP_KEY_VALUE",
                                          "LIST",
                                          "ENUM",
                                          "DECIMAL",
                                          "DATE",
                                          "TIME_MILLIS",
                                          "TIME_MICROS",
                                          "TIMESTAMP_MILLIS",
                                          "TIMESTAMP_MICROS",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "JSON",
                                          "BSON",
                                          "INTERVAL"};
  if (ct < 22) return Refuse(kConvertedNames[ct], c);
  Refuse("(unknown converted type " + std::to_string(ct) + ")", c);
}

}  // namespace

Status ReadSchema(const ThriftValue& schema, std::vector<ColumnDesc>* columns) {
  const std::vector<ThriftValue>& els = schema.list;
  // Each frame is an open group: the children it still expects, its levels, and the element
  // that names it. A leaf's path is joined from the open groups (at most kMaxSchemaDepth).
  struct Frame {
    int64_t children_left;
    int def, rep;
    size_t element;
  };
  const int64_t root_children = els[0].Int(kNumChildren, 0);
  if (root_children < 0 || uint64_t(root_children) > els.size() - 1) {
    return Status::Data("schema root claims " + std::to_string(root_children) +
                        " children, the schema has " + std::to_string(els.size() - 1) +
                        " elements after it");
  }
  std::vector<Frame> stack{{root_children, 0, 0, 0}};
  size_t path_bytes = 0;
  for (size_t k = 1; k < els.size(); ++k) {
    while (!stack.empty() && stack.back().children_left == 0) stack.pop_back();
    if (stack.empty()) return Status::Data("schema has more elements than its root's children");
    Frame& parent = stack.back();
    --parent.children_left;
    const ThriftValue& el = els[k];
    const ThriftValue* name = el.Field(kName);
    if (!name || name->kind != ThriftValue::Kind::kBinary) {
      return Status::Data("schema element " + std::to_string(k) + " without a name");
    }
    const int64_t rep = el.Int(kRepetition, kRequired);
    const int64_t children = el.Int(kNumChildren, 0);
    if (children < 0 || uint64_t(children) > els.size() - 1 - k) {
      return Status::Data("schema element " + std::to_string(k) + " claims " +
                          std::to_string(children) + " children, " +
                          std::to_string(els.size() - 1 - k) + " elements follow it");
    }
    const Frame me{children, parent.def + (rep != kRequired ? 1 : 0),
                   parent.rep + (rep == kRepeated ? 1 : 0), k};
    if (children > 0) {
      if (stack.size() >= size_t(kMaxSchemaDepth)) {
        return Status::Data("schema nested deeper than " + std::to_string(kMaxSchemaDepth) +
                            " levels");
      }
      stack.push_back(me);
      continue;
    }
    ColumnDesc c;
    for (size_t s = 1; s < stack.size(); ++s) {
      c.path += els[stack[s].element].Field(kName)->bin;
      c.path += '.';
    }
    c.path += name->bin;
    c.name = stack.size() > 1 ? els[stack[1].element].Field(kName)->bin : name->bin;
    path_bytes += c.path.size() + c.name.size();
    if (path_bytes > kMaxPathBytes) {
      return Status::Data("schema paths add up to more than " +
                          std::to_string(kMaxPathBytes >> 20) + " MiB");
    }
    c.type = PhysicalType(el.Int(kType, -1));
    c.leaf_index = int(columns->size());
    c.max_def = me.def;
    c.max_rep = me.rep;
    Annotate(el, &c);
    columns->push_back(std::move(c));
  }
  for (const Frame& f : stack) {
    if (f.children_left > 0) {
      return Status::Data("schema ends before its groups' " + std::to_string(f.children_left) +
                          " remaining children");
    }
  }
  return Status::Ok();
}

}  // namespace baton::parquet
