/* SPDX-License-Identifier: MIT */
/* cprof_sql.so: the SQL tables of sqlvtab.h as an SQLite loadable extension,
 * for the sqlite3 shell (.load .../cprof_sql) or any program that loads
 * extensions.  SQLite finds the entry point from the file name:
 * sqlite3_cprofsql_init. */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "sqlvtab.h"

int sqlite3_cprofsql_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api);

int sqlite3_cprofsql_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api)
{
	int rc;

	SQLITE_EXTENSION_INIT2(api);
	if ((rc = cp_sql_register(db)) != SQLITE_OK)
		*errmsg = sqlite3_mprintf("cprof: cannot register the cprof module: %s", sqlite3_errstr(rc));
	return rc;
}
