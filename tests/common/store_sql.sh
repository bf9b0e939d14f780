# store_sql FILE SQL: runs SQL on the test's store and prints rows as `a|b` lines — psql on
# $BATON_STORE when it names PostgreSQL (the `pg.` ctest entries), else sqlite3 on FILE. Sourced
# by the CLI and web shell tests, so one script checks both backends.
store_sql() {
  case ${BATON_STORE:-} in
    postgres://* | postgresql://*) psql -X -q -At -v ON_ERROR_STOP=1 "$BATON_STORE" -c "$2" ;;
    *) sqlite3 "$1" "$2" ;;
  esac
}
