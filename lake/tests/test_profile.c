/*
 * test_profile.c: storage profiles (profile.h): the rules for warehouses,
 * settings and credentials, the credentials file, and the storage a
 * profile that cannot be served gets. Secrets must never reach a message.
 */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tierlake/profile.h"

#define SECRET "s3cr3t/Value+With=Equals"

TEST(profile_warehouses)
{
	bool s3 = false;
	CHECK_INT(tl_profile_check_warehouse("/var/lake", &s3, NULL), 0);
	CHECK(!s3);
	CHECK_INT(tl_profile_check_warehouse("file:///var/lake", &s3, NULL), 0);
	CHECK_INT(tl_profile_check_warehouse("s3://bucket", &s3, NULL), 0);
	CHECK(s3);
	CHECK_INT(tl_profile_check_warehouse("s3://bucket/some/prefix", NULL, NULL), 0);
	CHECK_INT(tl_profile_check_warehouse("s3a://bucket/p", NULL, NULL), 0);
	const char *bad[] = {"", "relative/dir", "s3://", "s3:///key", "s3://b/p/", "s3://b//p", "gs://b/p",
	                     "s3://b/p q", "http://x/y"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tl_error err;
		tl_error_clear(&err);
		CHECK_INT(tl_profile_check_warehouse(bad[i], NULL, &err), -1);
		CHECK_INT(err.code, TL_ERR_INVALID);
		CHECK(strstr(err.message, "warehouse") != NULL);
	}
}

TEST(profile_refs)
{
	CHECK(tl_profile_ref_valid("R"));
	CHECK(tl_profile_ref_valid("prod_lake_2"));
	CHECK(!tl_profile_ref_valid(""));
	CHECK(!tl_profile_ref_valid(NULL));
	CHECK(!tl_profile_ref_valid("a-b"));
	CHECK(!tl_profile_ref_valid("a b"));
	CHECK(!tl_profile_ref_valid("a=b"));
}

TEST(profile_config)
{
	tl_error err;
	CHECK_INT(tl_profile_check_config(NULL, NULL), 0);
	CHECK_INT(tl_profile_check_config("{}", NULL), 0);
	CHECK_INT(tl_profile_check_config("{\"endpoint\":\"http://127.0.0.1:9000\",\"region\":\"eu-west-1\","
	                                  "\"addressing\":\"virtual\"}",
	                                  NULL),
	          0);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_check_config("{\"endpiont\":\"http://x\"}", &err), -1);
	CHECK(strstr(err.message, "unknown storage profile setting 'endpiont'") != NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_check_config("{\"addressing\":\"sideways\"}", &err), -1);
	CHECK(strstr(err.message, "path or virtual") != NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_check_config("{\"endpoint\":\"127.0.0.1:9000\"}", &err), -1);
	CHECK(strstr(err.message, "http://") != NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_check_config("{\"region\":7}", &err), -1);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_check_config("[1]", &err), -1);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_check_config("{", &err), -1);
}

TEST(profile_credentials_text)
{
	CHECK_INT(tl_profile_check_credentials("access_key_id=AK;secret_access_key=" SECRET, "V", NULL), 0);
	CHECK_INT(tl_profile_check_credentials(" access_key_id = AK ; secret_access_key=" SECRET
	                                       ";session_token=tok==;",
	                                       "V", NULL),
	          0);
	/* Every malformed form: an error naming the variable and never the secret. */
	const char *bad[] = {
		"access_key_id=AK",                                         /* no secret */
		"secret_access_key=" SECRET,                                /* no key id */
		"access_key_id=AK;" SECRET,                                 /* an item without a key */
		"access_key_id=AK;secret_access_key=" SECRET ";colour=" SECRET, /* an unknown key */
		"access_key_id=AK;secret_access_key=" SECRET ";secret_access_key=" SECRET, /* twice */
		"access_key_id=AK;secret_access_key=",                      /* empty */
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tl_error err;
		tl_error_clear(&err);
		CHECK_INT(tl_profile_check_credentials(bad[i], "TIERDB_CREDENTIALS_R", &err), -1);
		CHECK_INT(err.code, TL_ERR_INVALID);
		CHECK(strstr(err.message, "TIERDB_CREDENTIALS_R") != NULL);
		CHECK(strstr(err.message, "s3cr3t") == NULL);
		if (i == 3)
			CHECK(strstr(err.message, "unknown key 'colour'") != NULL);
	}
}

TEST(profile_credentials_file)
{
	const char *file = "# TierDB credentials\n"
	                   "\n"
	                   "TIERDB_CREDENTIALS_A=access_key_id=ka;secret_access_key=sa\n"
	                   "export TIERDB_CREDENTIALS_AB = ignored\n"
	                   "  TIERDB_CREDENTIALS_B=access_key_id=kb;secret_access_key=" SECRET "  \n"
	                   "TIERDB_CREDENTIALS_A=access_key_id=ka2;secret_access_key=sa2";
	char *value = NULL;
	CHECK_INT(tl_profile_credentials_lookup(file, "A", "/f", &value, NULL), 1);
	CHECK_STR(value, "access_key_id=ka2;secret_access_key=sa2");
	free(value);
	CHECK_INT(tl_profile_credentials_lookup(file, "B", "/f", &value, NULL), 1);
	CHECK_STR(value, "access_key_id=kb;secret_access_key=" SECRET);
	free(value);
	CHECK_INT(tl_profile_credentials_lookup(file, "C", "/f", &value, NULL), 0);
	CHECK(value == NULL);
	CHECK_INT(tl_profile_credentials_lookup("", "C", "/f", &value, NULL), 0);

	tl_error err;
	tl_error_clear(&err);
	CHECK_INT(tl_profile_credentials_lookup("TIERDB_CREDENTIALS_A=x\n" SECRET "\n", "A", "/f", &value, &err), -1);
	CHECK(value == NULL);
	CHECK(strstr(err.message, "/f, line 2") != NULL);
	CHECK(strstr(err.message, "s3cr3t") == NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_profile_credentials_lookup("TIERDB_CREDENTIALS_=" SECRET "\n", "A", "/f", &value, &err), -1);
	CHECK(strstr(err.message, "s3cr3t") == NULL);
}

TEST(profile_storage_local_is_none)
{
	tl_profile p = {.name = "local", .warehouse = "/tmp/wh"};
	tl_error err;
	tl_error_clear(&err);
	CHECK(tl_profile_storage_new(&p, &err) == NULL);
	CHECK_INT(err.code, TL_OK);
}

/* A profile that cannot be served fails every operation, naming the profile and the reference. */
TEST(profile_storage_unusable)
{
	tl_profile missing = {.name = "lake2", .warehouse = "s3://b/wh", .credential_ref = "R",
	                      .credentials_source = "the daemon's environment"};
	tl_profile malformed = {.name = "lake2", .warehouse = "s3://b/wh", .credential_ref = "R",
	                        .credentials = "access_key_id=AK;" SECRET};
	tl_profile badconfig = {.name = "lake2", .warehouse = "s3://b/wh", .lake_config = "{\"colour\":\"x\"}"};
	tl_profile unsafe = {.name = "lake2", .warehouse = "s3://b/wh", .credential_ref = "R",
	                     .credentials_error = "credentials file /x is readable by others"};
	const tl_profile *profiles[] = {&missing, &malformed, &unsafe, &badconfig};
	for (int i = 0; i < 4; i++) {
		tl_error err;
		tl_error_clear(&err);
		tl_storage *s = tl_profile_storage_new(profiles[i], &err);
		CHECK(s != NULL);
		CHECK(err.code != TL_OK);
		CHECK(strncmp(err.message, "storage profile 'lake2'", 23) == 0);
		CHECK(strstr(err.message, ": :") == NULL);
		if (i < 3)
			CHECK(strstr(err.message, "(credentials R)") != NULL);
		if (i == 2)
			CHECK(strstr(err.message, "/x is readable by others") != NULL);
		CHECK(strstr(err.message, "s3cr3t") == NULL);
		char saved[TL_ERROR_MESSAGE_MAX];
		strcpy(saved, err.message);

		tl_error_clear(&err);
		CHECK(s->open_read(s, "s3://b/wh/t/x.parquet", &err) == NULL);
		CHECK_STR(err.message, saved);
		tl_error_clear(&err);
		CHECK(s->create(s, "s3://b/wh/t/x.parquet", TL_STORAGE_CREATE_EXCLUSIVE, &err) == NULL);
		CHECK_STR(err.message, saved);
		tl_error_clear(&err);
		CHECK_INT(s->create_if_absent(s, "s3://b/wh/t/v1.metadata.json", "{}", 2, &err), -1);
		CHECK_STR(err.message, saved);
		tl_error_clear(&err);
		tl_storage_list list;
		CHECK_INT(s->list(s, "s3://b/wh/t", 0, &list, &err), -1);
		CHECK_STR(err.message, saved);
		tl_error_clear(&err);
		CHECK_INT(s->stat(s, "s3://b/wh/t", NULL, NULL, &err), -1);
		CHECK_STR(err.message, saved);
		tl_error_clear(&err);
		CHECK(s->canonical(s, "s3://b/wh/t", &err) == NULL);
		CHECK_STR(err.message, saved);
		tl_profile_storage_free(s);
	}
	{ /* the missing reference says where it was looked for and what to add */
		tl_error err;
		tl_error_clear(&err);
		tl_storage *s = tl_profile_storage_new(&missing, &err);
		CHECK(strstr(err.message, "TIERDB_CREDENTIALS_R=") != NULL);
		CHECK(strstr(err.message, "the daemon's environment") != NULL);
		tl_profile_storage_free(s);
	}
}

/* A servable profile's storage is registered under its warehouse and chosen for its locations. */
TEST(profile_storage_registered_by_prefix)
{
	tl_profile p = {.name = "lake2", .warehouse = "s3://b/wh", .credential_ref = "R",
	                .credentials = "access_key_id=AK;secret_access_key=" SECRET,
	                .lake_config = "{\"endpoint\":\"http://127.0.0.1:1\",\"region\":\"eu-west-1\"}"};
	tl_error err;
	tl_error_clear(&err);
	tl_storage *s = tl_profile_storage_new(&p, &err);
	CHECK(s != NULL);
	CHECK_INT(err.code, TL_OK);
	tl_storage *before = tl_storage_register_prefix(p.warehouse, s);
	CHECK(tl_storage_for("s3://b/wh/public/t/metadata/v1.metadata.json", NULL) == s);
	CHECK(tl_storage_for("s3://b/wh2/t", NULL) != s);
	tl_storage_register_prefix(p.warehouse, before);
	tl_profile_storage_free(s);
}
