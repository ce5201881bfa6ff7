/*
 * copy_decoder.c: the tierdb command's type mapping and binary COPY decoder
 * (cli/pgmap.c, cli/pgcopy.c), compiled into the extension.  Direct writes
 * (direct.c) turn rows into the lake's column batches with the same code
 * the daemon streams partitions with, so both write every value alike.
 * Those files are plain C11 without Postgres headers, in the command's
 * style (declarations where first needed).
 */
#pragma GCC diagnostic ignored "-Wdeclaration-after-statement"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#include "../../cli/pgmap.c"
#include "../../cli/pgcopy.c"
