/*
 * calendar.h: the proleptic Gregorian calendar arithmetic every format
 * needs (Parquet and Iceberg dates count days from 1970-01-01; timestamps
 * count micro- or nanoseconds), in one place.
 */
#ifndef TIERLAKE_CALENDAR_H
#define TIERLAKE_CALENDAR_H

#include <stdint.h>

/* a / b rounded toward negative infinity (b > 0); *rem, if not NULL, gets the remainder in [0, b). */
static inline int64_t tl_floor_div(int64_t a, int64_t b, int64_t *rem)
{
	int64_t q = a / b, r = a % b;
	if (r < 0) {
		r += b;
		q--;
	}
	if (rem)
		*rem = r;
	return q;
}

/* Days since 1970-01-01 to year, month (1-12) and day (1-31); exact for any int64 day count a timestamp yields. */
void tl_civil_from_days(int64_t days, int64_t *year, int *month, int *day);
/* The inverse; month and day must be valid for the year. */
int64_t tl_days_from_civil(int64_t year, int month, int day);

#endif
