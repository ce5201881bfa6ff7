/*
 * calendar.c: days since 1970-01-01 to and from civil dates, after Howard
 * Hinnant's algorithms: shift to eras of 400 years starting on March 1, so
 * leap days fall at the end of each year and every era has the same shape.
 */
#include "tierlake/calendar.h"

void tl_civil_from_days(int64_t days, int64_t *year, int *month, int *day)
{
	int64_t doe;
	int64_t era = tl_floor_div(days + 719468, 146097, &doe);            /* doe in [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);              /* [0, 365] */
	int64_t mp = (5 * doy + 2) / 153;                                   /* [0, 11] */
	*day = (int)(doy - (153 * mp + 2) / 5 + 1);
	*month = (int)(mp < 10 ? mp + 3 : mp - 9);
	*year = yoe + era * 400 + (*month <= 2);
}

int64_t tl_days_from_civil(int64_t year, int month, int day)
{
	int64_t yoe;
	int64_t era = tl_floor_div(year - (month <= 2), 400, &yoe);
	int64_t doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}
