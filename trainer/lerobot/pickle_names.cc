#include <map>

#include "trainer/lerobot/pickle_machine.h"

namespace baton::pickle {

int64_t StorageElementSize(const std::string& cls) {
  static const std::map<std::string, int64_t> kSizes = {
      {"BFloat16", 2}, {"Half", 2},  {"Float", 4}, {"Double", 8}, {"Long", 8},
      {"Int", 4},      {"Short", 2}, {"Char", 1},  {"Byte", 1},   {"Bool", 1}};
  auto it = kSizes.find(cls);
  return it == kSizes.end() ? 0 : it->second;
}

// Names of the opcodes a refusal may meet, for its message.
const char* OpName(uint8_t op) {
  switch (op) {
    case 'b':
      return "BUILD";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 'P':
      return "PERSID";
    case 'g':
      return "GET";
    case 'p':
      return "PUT";
    case 'I':
      return "INT";
    case 'L':
      return "LONG";
    case 'F':
      return "FLOAT";
    case 'S':
      return "STRING";
    case 'V':
      return "UNICODE";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case '2':
      return "DUP";
    case '1':
      return "POP_MARK";
    case 'd':
      return "DICT";
    case 'l':
      return "LIST";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x8b:
      return "LONG4";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    default:
      return "unknown";
  }
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "a bool";
    case Kind::kInt:
      return "an int";
    case Kind::kFloat:
      return "a float";
    case Kind::kString:
      return "a string";
    case Kind::kTuple:
      return "a tuple";
    case Kind::kList:
      return "a list";
    case Kind::kDict:
      return "a dict";
    case Kind::kTensor:
      return "a tensor";
    case Kind::kGlobal:
      return "a global";
    case Kind::kStorage:
      return "a storage";
  }
  return "?";
}

}  // namespace baton::pickle
