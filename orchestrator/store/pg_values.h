// Values of a libpq result as the store reads them (PgStatement, pg_db.h), in either of the two
// wire formats. A text-format value is the server's printed form (parsed here); a binary-format
// value is the type's network form, which saves the server printing and the client parsing
// every double and every bytea (hex in text form) of a large read. Binary is used only for
// results whose every column has a type decoded here (PgBinaryReadable); the accessors then
// answer exactly what the text form would (integers, doubles, "t"/"f" booleans as 1/0, text,
// bytes). Pure functions over a PGresult the caller owns; thread-safe.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <string>

namespace baton {

// True when every column of `res` has a type these accessors decode in binary form.
bool PgBinaryReadable(const PGresult* res);

// The value at (row, col), which must not be NULL; `binary` says the result's format.
int64_t PgInt(const PGresult* res, int row, int col, bool binary);
double PgDouble(const PGresult* res, int row, int col, bool binary);
std::string PgText(const PGresult* res, int row, int col, bool binary);
// A bytea's bytes (a binary value is them already; a text one is unescaped).
std::string PgBytes(const PGresult* res, int row, int col, bool binary);

// A double as the server reads it back exactly (round-trip digits, Infinity spelled out).
std::string PgFormatDouble(double v);

}  // namespace baton
