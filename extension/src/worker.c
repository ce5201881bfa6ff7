/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The embedded worker: the server runs the TierDB daemon itself.
 *
 * With shared_preload_libraries = 'tierdb' and tierdb.embedded_worker = on,
 * the postmaster starts a background worker that supervises one child
 * process, `<tierdb.worker_command> run`, the same daemon an operator would
 * otherwise run beside the server (SPEC §8).  The daemon stays a separate
 * program rather than code inside the worker: it links the lake library and
 * libpq, does long file and network I/O, and may crash without taking the
 * server through crash recovery with it.
 *
 * The supervisor
 *	- points the child at this server through libpq's environment: PGHOST
 *	  (the first Unix socket directory, else the first listen address),
 *	  PGPORT, PGDATABASE = tierdb.worker_database and PGUSER = the bootstrap
 *	  superuser, TIERDB_CREDENTIALS_FILE = the server's credentials file
 *	  (storage_profiles.c), then adds tierdb.worker_env (which may override
 *	  any of them);
 *	- logs every start and exit with the child's PID and status;
 *	- starts the child again after it ends, after 1 s, doubling up to 30 s
 *	  while it keeps dying young; the delay goes back to 1 s once a child has
 *	  run for a minute;
 *	- restarts it when a reload changes worker_command, worker_database or
 *	  worker_env;
 *	- on SIGTERM (server shutdown) or postmaster death sends SIGTERM to the
 *	  child, waits up to STOP_GRACE_MS for it, then SIGKILLs it.
 *
 * The child runs in a session of its own, out of the supervisor's process
 * group, which the postmaster signals as a whole (SIGTERM, SIGQUIT, SIGINT),
 * and out of the terminal's of a server run in the foreground: the
 * supervisor alone decides how the daemon stops, with SIGTERM and a grace
 * period rather than, say, the SIGQUIT of an immediate shutdown.  In return,
 * if the supervisor dies without stopping it (SIGQUIT, SIGKILL), the kernel
 * sends the child SIGTERM (PR_SET_PDEATHSIG), so it is never left orphaned.
 *
 * The worker connects to no database, only to the shared catalogs, to look
 * up the bootstrap superuser's name; the child makes its own connections.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_authid_d.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "storage_profiles.h"
#include "worker.h"

extern char **environ;

/* Seconds before the postmaster starts a supervisor that exited again. */
#define SUPERVISOR_RESTART_SECONDS 5

/* Delay before starting the daemon again: doubles while it keeps failing. */
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
/* A child that ran this long was healthy: its next restart is prompt. */
#define HEALTHY_RUN_MS 60000

/*
 * How long a stopping daemon may take to finish its step after SIGTERM.
 * Its steps are journaled and resume after a kill (SPEC §8), so the limit
 * only trades a tidier stop for a quicker server shutdown.
 */
#define STOP_GRACE_MS 10000

/* GUC variables */
static bool embedded_worker = false;
static char *worker_command = NULL;
static char *worker_database = NULL;
static char *worker_env = NULL;

/*
 * The values the configuration gave the string settings before the library
 * defined them (NULL when unset).  PostgreSQL only warns when such a value
 * fails its check and keeps the default instead; tierdb_worker_register
 * refuses that, since a daemon started without, say, its TIERDB_WAREHOUSE
 * would write to the wrong lake.
 */
static char *configured_command = NULL;
static char *configured_database = NULL;
static char *configured_env = NULL;

/* Set by signal handlers, consumed by the main loop. */
static volatile sig_atomic_t got_sigterm = false;
static volatile sig_atomic_t got_sigchld = false;

/* The running child, or 0. */
static pid_t child_pid = 0;
static TimestampTz child_started_at = 0;

/* Memory for building one child's command line and environment. */
static MemoryContext start_cxt = NULL;

/*
 * Splits a tierdb.worker_env value, "NAME=VALUE;NAME=VALUE", into a list of
 * palloc'd "NAME=VALUE" strings.  Whitespace around an entry and empty
 * entries are ignored; a value cannot contain ';'.  Returns false with
 * *bad_entry set when an entry is not NAME=VALUE with a valid name.
 */
static bool
parse_worker_env(const char *value, List **entries, char **bad_entry)
{
	char	   *copy = pstrdup(value);
	char	   *tok = copy;

	*entries = NIL;
	while (tok != NULL)
	{
		char	   *next = strchr(tok, ';');
		char	   *end;
		const char *p;

		if (next != NULL)
			*next++ = '\0';
		while (*tok == ' ' || *tok == '\t' || *tok == '\n' || *tok == '\r')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t' ||
							 end[-1] == '\n' || end[-1] == '\r'))
			*--end = '\0';

		if (*tok != '\0')
		{
			/* A name as the shell accepts it: [A-Za-z_][A-Za-z0-9_]* */
			p = tok;
			if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_')
			{
				p++;
				while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
					   (*p >= '0' && *p <= '9') || *p == '_')
					p++;
			}
			if (p == tok || *p != '=')
			{
				*bad_entry = pstrdup(tok);
				pfree(copy);
				return false;
			}
			*entries = lappend(*entries, pstrdup(tok));
		}
		tok = next;
	}
	pfree(copy);
	return true;
}

static bool
check_worker_command(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0')
	{
		GUC_check_errdetail("tierdb.worker_command must name the tierdb program.");
		return false;
	}

	/*
	 * A relative path would be resolved against the data directory, the
	 * server's working directory, which is rarely what was meant.
	 */
	if (strchr(*newval, '/') != NULL && (*newval)[0] != '/')
	{
		GUC_check_errdetail("tierdb.worker_command must be an absolute path or a program name looked up on the server's PATH.");
		return false;
	}
	return true;
}

static bool
check_worker_database(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0')
	{
		GUC_check_errdetail("tierdb.worker_database must name the database holding the TierDB catalog.");
		return false;
	}
	return true;
}

static bool
check_worker_env(char **newval, void **extra, GucSource source)
{
	List	   *entries;
	char	   *bad_entry = NULL;

	if (*newval == NULL)
		return true;
	if (!parse_worker_env(*newval, &entries, &bad_entry))
	{
		GUC_check_errdetail("Entry \"%s\" is not NAME=VALUE.", bad_entry);
		GUC_check_errhint("Separate the entries with ';', e.g. 'TIERDB_WAREHOUSE=/srv/lake;TIERDB_CYCLE_INTERVAL_SECONDS=10'.");
		return false;
	}
	list_free_deep(entries);
	return true;
}

/* The placeholder value of a setting not defined yet, copied; or NULL. */
static char *
configured_value(const char *name)
{
	const char *value = GetConfigOption(name, true, false);

	return value != NULL ? MemoryContextStrdup(TopMemoryContext, value) : NULL;
}

/* ERROR (FATAL in the postmaster) when the configured value was rejected. */
static void
require_accepted(const char *name, const char *configured)
{
	const char *effective = GetConfigOption(name, false, false);

	if (configured != NULL && strcmp(configured, effective) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\" with tierdb.embedded_worker on", name),
				 errdetail("The warning above says what is wrong with the configured value; the daemon would run with the default instead."),
				 errhint("Correct %s, or set tierdb.embedded_worker = off.", name)));
}

void
tierdb_worker_define_gucs(void)
{
	configured_command = configured_value("tierdb.worker_command");
	configured_database = configured_value("tierdb.worker_database");
	configured_env = configured_value("tierdb.worker_env");

	/*
	 * guc.c refuses (FATAL) to define a PGC_POSTMASTER setting except while
	 * the postmaster preloads the library.  A backend that loads it later
	 * (CREATE EXTENSION, or a call of one of its C functions) runs no
	 * worker, so the setting is left out there.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomBoolVariable("tierdb.embedded_worker",
								 "Runs the TierDB daemon (tierdb run) as a child of the server.",
								 "Takes effect only with tierdb in shared_preload_libraries.",
								 &embedded_worker,
								 false,
								 PGC_POSTMASTER,
								 0,
								 NULL, NULL, NULL);

	/*
	 * The command runs as the server's OS user, so it and its environment
	 * are settable only where the server's own configuration is (SIGHUP),
	 * and the environment, which may hold credentials, is shown to
	 * superusers only.
	 */
	DefineCustomStringVariable("tierdb.worker_command",
							   "The tierdb program the embedded worker runs as \"<command> run\".",
							   "An absolute path, or a program name looked up on the server's PATH.",
							   &worker_command,
							   "tierdb",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   check_worker_command, NULL, NULL);

	DefineCustomStringVariable("tierdb.worker_database",
							   "The database the embedded worker's daemon connects to.",
							   NULL,
							   &worker_database,
							   "postgres",
							   PGC_SIGHUP,
							   0,
							   check_worker_database, NULL, NULL);

	DefineCustomStringVariable("tierdb.worker_env",
							   "Extra environment of the embedded worker's daemon, as NAME=VALUE;NAME=VALUE.",
							   "For example TIERDB_WAREHOUSE and TIERDB_CYCLE_INTERVAL_SECONDS; entries override the PG* variables the worker sets.",
							   &worker_env,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   check_worker_env, NULL, NULL);
}

void
tierdb_worker_register(void)
{
	BackgroundWorker worker;

	if (!embedded_worker)
		return;

	require_accepted("tierdb.worker_command", configured_command);
	require_accepted("tierdb.worker_database", configured_database);
	require_accepted("tierdb.worker_env", configured_env);

	memset(&worker, 0, sizeof(worker));

	/*
	 * A connection (to the shared catalogs only) to read the bootstrap
	 * superuser's name.  Start once recovery has finished: the daemon
	 * writes, so it has nothing to do on a standby.
	 */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = SUPERVISOR_RESTART_SECONDS;
	strlcpy(worker.bgw_library_name, "tierdb", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "tierdb_embedded_worker_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "tierdb embedded worker", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "tierdb embedded worker", BGW_MAXLEN);
	worker.bgw_main_arg = (Datum) 0;
	worker.bgw_notify_pid = 0;

	RegisterBackgroundWorker(&worker);
}

static void
handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

static void
handle_sigchld(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigchld = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* The bootstrap superuser's current name (it can be renamed). */
static char *
bootstrap_superuser_name(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *name;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	name = MemoryContextStrdup(cxt, GetUserNameFromId(BOOTSTRAP_SUPERUSERID, false));
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return name;
}

/*
 * Where a client on this machine reaches the server: the first Unix socket
 * directory, else the first listen address (a wildcard becomes the loopback
 * address), else NULL when the server accepts no connections at all.
 */
static char *
server_host(void)
{
	List	   *elems;

	if (Unix_socket_directories != NULL && Unix_socket_directories[0] != '\0' &&
		SplitDirectoriesString(pstrdup(Unix_socket_directories), ',', &elems) &&
		elems != NIL)
		return (char *) linitial(elems);

	if (ListenAddresses != NULL && ListenAddresses[0] != '\0' &&
		SplitGUCList(pstrdup(ListenAddresses), ',', &elems) && elems != NIL)
	{
		const char *addr = linitial(elems);

		if (strcmp(addr, "*") == 0)
			return pstrdup("localhost");
		if (strcmp(addr, "0.0.0.0") == 0)
			return pstrdup("127.0.0.1");
		if (strcmp(addr, "::") == 0)
			return pstrdup("::1");
		return pstrdup(addr);
	}
	return NULL;
}

/* Sets "NAME=VALUE" in env, replacing an earlier entry of the same name. */
static void
env_put(List **env, const char *entry)
{
	size_t		namelen = strcspn(entry, "=");
	ListCell   *lc;

	foreach(lc, *env)
	{
		const char *old = lfirst(lc);

		if (strncmp(old, entry, namelen) == 0 && old[namelen] == '=')
		{
			lfirst(lc) = pstrdup(entry);
			return;
		}
	}
	*env = lappend(*env, pstrdup(entry));
}

/*
 * The child's environment: the server's, minus what would point libpq or
 * the daemon at another server (every PG* variable and TIERDB_PG_URL, which
 * SPEC §8 prefers over PG*), plus this server's coordinates, plus
 * tierdb.worker_env.  NULL-terminated, for execve.
 */
static char **
child_environment(const char *host, const char *user)
{
	List	   *env = NIL;
	List	   *extra = NIL;
	char	   *bad_entry = NULL;
	char	  **envp;
	char	  **e;
	ListCell   *lc;
	int			i = 0;

	for (e = environ; *e != NULL; e++)
	{
		if (strncmp(*e, "PG", 2) == 0 || strncmp(*e, "TIERDB_PG_URL=", 14) == 0)
			continue;
		env_put(&env, *e);
	}
	env_put(&env, psprintf("PGHOST=%s", host));
	env_put(&env, psprintf("PGPORT=%d", PostPortNumber));
	env_put(&env, psprintf("PGDATABASE=%s", worker_database));
	env_put(&env, psprintf("PGUSER=%s", user));
	/* The daemon runs as the server's OS user, so it can read the server's credentials file (docs/profiles.md). */
	env_put(&env, psprintf("TIERDB_CREDENTIALS_FILE=%s", storage_profiles_credentials_path()));

	/* Checked by check_worker_env already. */
	if (parse_worker_env(worker_env, &extra, &bad_entry))
	{
		foreach(lc, extra)
			env_put(&env, lfirst(lc));
	}

	envp = palloc((list_length(env) + 1) * sizeof(char *));
	foreach(lc, env)
		envp[i++] = lfirst(lc);
	envp[i] = NULL;
	return envp;
}

/*
 * The child between fork and exec.  Plain system calls only: nothing of the
 * server's (palloc, elog, its exit callbacks) may run in this process.  On
 * an exec failure the errno goes back to the parent through err_fd
 * (close-on-exec, so a successful exec closes it unwritten).
 */
static void exec_child(char **argv, char **envp, pid_t parent, int err_fd) pg_attribute_noreturn();

static void
exec_child(char **argv, char **envp, pid_t parent, int err_fd)
{
	sigset_t	none;
	int			sig;
	int			fd;
	int			save_errno;

	/* The server's handlers and ignored signals (SIGPIPE) are not the daemon's. */
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* Out of the supervisor's process group (see the header comment). */
	setsid();

	/* Never outlive the supervisor; it may have died before this call. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
		_exit(1);

	/* stdin from /dev/null; stdout and stderr stay the server's log. */
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO)
	{
		dup2(fd, STDIN_FILENO);
		close(fd);
	}

	/*
	 * The server's files and sockets are not the daemon's business: close
	 * them at exec (err_fd is close-on-exec already).  Kernels before 5.11
	 * lack CLOSE_RANGE_CLOEXEC: then mark descriptors one by one, as far as
	 * the server could have opened them.
	 */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
	{
		long		max_fd = sysconf(_SC_OPEN_MAX);

		if (max_fd < 0 || max_fd > 65536)
			max_fd = 65536;
		for (fd = 3; fd < max_fd; fd++)
			(void) fcntl(fd, F_SETFD, FD_CLOEXEC);
	}

	environ = envp;				/* so that execvp searches the child's PATH */
	execvp(argv[0], argv);

	save_errno = errno;
	if (write(err_fd, &save_errno, sizeof(save_errno)) < 0)
	{
		/* nothing is left to report it to */
	}
	_exit(127);
}

/*
 * Starts the daemon.  Returns false, having logged why, when it could not be
 * started; the caller retries later.
 */
static bool
start_child(void)
{
	MemoryContext oldcxt;
	char	   *user;
	char	   *host;
	char	   *argv[3];
	char	  **envp;
	int			err_pipe[2];
	int			child_errno = 0;
	ssize_t		n;
	sigset_t	all;
	sigset_t	saved;
	pid_t		pid;

	MemoryContextReset(start_cxt);
	oldcxt = MemoryContextSwitchTo(start_cxt);

	host = server_host();
	if (host == NULL)
	{
		ereport(LOG,
				(errmsg("tierdb embedded worker cannot start the daemon: the server accepts no connections"),
				 errhint("Set unix_socket_directories or listen_addresses.")));
		MemoryContextSwitchTo(oldcxt);
		return false;
	}
	user = bootstrap_superuser_name();
	argv[0] = pstrdup(worker_command);
	argv[1] = "run";
	argv[2] = NULL;
	envp = child_environment(host, user);

	if (pipe2(err_pipe, O_CLOEXEC) != 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("tierdb embedded worker could not create a pipe: %m")));
		MemoryContextSwitchTo(oldcxt);
		return false;
	}

	/*
	 * Block signals across fork, so that none of the server's handlers runs
	 * in the child before exec_child resets them.
	 */
	fflush(NULL);
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &saved);
	pid = fork();
	if (pid == 0)
	{
		close(err_pipe[0]);
		exec_child(argv, envp, MyProcPid, err_pipe[1]);
	}
	sigprocmask(SIG_SETMASK, &saved, NULL);
	close(err_pipe[1]);

	if (pid < 0)
	{
		ereport(LOG,
				(errmsg("tierdb embedded worker could not fork: %m")));
		close(err_pipe[0]);
		MemoryContextSwitchTo(oldcxt);
		return false;
	}

	/* Zero bytes (EOF) mean exec succeeded and closed the pipe. */
	do
		n = read(err_pipe[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(err_pipe[0]);

	if (n == sizeof(child_errno))
	{
		int			status;

		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		errno = child_errno;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("tierdb embedded worker could not run \"%s\": %m", worker_command),
				 errhint("Set tierdb.worker_command to the absolute path of the tierdb program, or put the program on the server's PATH.")));
		MemoryContextSwitchTo(oldcxt);
		return false;
	}

	child_pid = pid;
	child_started_at = GetCurrentTimestamp();
	ereport(LOG,
			(errmsg("tierdb embedded worker started \"%s run\" with PID %d",
					worker_command, (int) pid),
			 errdetail("It connects to database \"%s\" as user \"%s\" through host \"%s\", port %d.",
					   worker_database, user, host, PostPortNumber)));
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("%s run (PID %d)", worker_command, (int) pid));
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/*
 * Stops the running child, if any: SIGTERM, up to STOP_GRACE_MS for it to
 * exit, then SIGKILL.  Returns once it has been reaped.
 */
static void
stop_child(const char *why)
{
	TimestampTz deadline;
	pid_t		pid = child_pid;
	int			status;
	pid_t		r;
	MemoryContext oldcxt;

	if (pid <= 0)
		return;
	/* wait_result_to_str's string lives until the next start. */
	oldcxt = MemoryContextSwitchTo(start_cxt);
	ereport(LOG,
			(errmsg("tierdb embedded worker is stopping the daemon with PID %d", (int) pid),
			 errdetail("%s", why)));
	kill(pid, SIGTERM);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), STOP_GRACE_MS);

	for (;;)
	{
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
		{
			/* Not our child any more (cannot happen): nothing to wait for. */
			child_pid = 0;
			MemoryContextSwitchTo(oldcxt);
			return;
		}
		if (GetCurrentTimestamp() >= deadline)
		{
			ereport(LOG,
					(errmsg("tierdb daemon with PID %d did not exit within %d s of SIGTERM; killing it",
							(int) pid, STOP_GRACE_MS / 1000)));
			kill(pid, SIGKILL);
			while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
				;
			break;
		}
		/* SIGCHLD cuts the sleep short. */
		pg_usleep(50 * 1000L);
	}
	child_pid = 0;
	if (r == pid)
		ereport(LOG,
				(errmsg("tierdb daemon with PID %d ended: %s",
						(int) pid, wait_result_to_str(status))));
	MemoryContextSwitchTo(oldcxt);
}

/* Exit callback: whatever ends the worker also ends the daemon. */
static void
stop_child_at_exit(int code, Datum arg)
{
	stop_child("The embedded worker is exiting.");
}

/*
 * Reaps the child if it has ended, and schedules the next start: *backoff_ms
 * after now, doubling the delay for the time after that unless the child
 * had been healthy.
 */
static void
reap_child(int *backoff_ms, TimestampTz *next_start)
{
	int			status;
	pid_t		pid = child_pid;
	TimestampTz now;
	long		ran_ms;
	MemoryContext oldcxt;

	if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid)
		return;
	child_pid = 0;
	/* wait_result_to_str's string lives until the next start. */
	oldcxt = MemoryContextSwitchTo(start_cxt);
	now = GetCurrentTimestamp();
	ran_ms = TimestampDifferenceMilliseconds(child_started_at, now);
	if (ran_ms >= HEALTHY_RUN_MS)
		*backoff_ms = BACKOFF_MIN_MS;
	*next_start = TimestampTzPlusMilliseconds(now, *backoff_ms);

	ereport(LOG,
			(errmsg("tierdb daemon with PID %d ended: %s", (int) pid, wait_result_to_str(status)),
			 errdetail("It ran for %ld s; the embedded worker starts it again in %d s.",
					   ran_ms / 1000, *backoff_ms / 1000),
			 errhint("The daemon's own messages precede this one in the server log.")));
	pgstat_report_activity(STATE_IDLE, NULL);
	*backoff_ms = Min(*backoff_ms * 2, BACKOFF_MAX_MS);
	MemoryContextSwitchTo(oldcxt);
}

/* The settings a running child was started with, as one comparable string. */
static char *
child_settings(void)
{
	return psprintf("%s\n%s\n%s", worker_command, worker_database, worker_env);
}

void
tierdb_embedded_worker_main(Datum main_arg)
{
	int			backoff_ms = BACKOFF_MIN_MS;
	TimestampTz next_start = 0;

	pqsignal(SIGTERM, handle_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGCHLD, handle_sigchld);
	BackgroundWorkerUnblockSignals();

	/* No database: the shared catalogs are enough (see the header comment). */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	start_cxt = AllocSetContextCreate(TopMemoryContext,
									  "tierdb embedded worker",
									  ALLOCSET_SMALL_SIZES);
	before_shmem_exit(stop_child_at_exit, (Datum) 0);

	for (;;)
	{
		long		timeout_ms = -1;

		CHECK_FOR_INTERRUPTS();
		if (got_sigterm)
			break;

		if (ConfigReloadPending)
		{
			char	   *before = child_settings();
			char	   *after;

			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			after = child_settings();
			if (strcmp(before, after) != 0)
			{
				stop_child("tierdb.worker_command, tierdb.worker_database or tierdb.worker_env changed.");
				/* New settings deserve a prompt first try. */
				backoff_ms = BACKOFF_MIN_MS;
				next_start = 0;
			}
			pfree(before);
			pfree(after);
		}

		if (got_sigchld)
		{
			got_sigchld = false;
			reap_child(&backoff_ms, &next_start);
		}

		if (child_pid == 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (now >= next_start && !start_child())
			{
				next_start = TimestampTzPlusMilliseconds(now, backoff_ms);
				backoff_ms = Min(backoff_ms * 2, BACKOFF_MAX_MS);
			}
			if (child_pid == 0)
				timeout_ms = Max(TimestampDifferenceMilliseconds(now, next_start), 1);
		}

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
						 (timeout_ms >= 0 ? WL_TIMEOUT : 0),
						 timeout_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	stop_child("The server is shutting down, or the embedded worker was terminated.");

	/* Exit code 1: should this not be a shutdown, the postmaster restarts us. */
	proc_exit(1);
}
