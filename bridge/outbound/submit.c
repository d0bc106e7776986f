#include "core/config.h"
#include "outbound/submit.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

/* Renamed in 8.2.0; the old name has a typo. */
#if LIBCURL_VERSION_NUM >= 0x080200
#define PB_CURLOPT_RCPT_ALLOWFAILS CURLOPT_MAIL_RCPT_ALLOWFAILS
#else
#define PB_CURLOPT_RCPT_ALLOWFAILS CURLOPT_MAIL_RCPT_ALLLOWFAILS
#endif

/* RFC 5321 4.5.3.1.1 and 4.5.3.1.2. */
#define LOCAL_PART_MAX 64
#define DOMAIN_MAX 255
#define LABEL_MAX 63
/* sendmail: how long it has to go after SIGTERM before SIGKILL. */
#define KILL_GRACE_MS 2000
/* sendmail: the longest single wait, so a child that exits while
 * something else holds its stderr open is noticed. */
#define POLL_SLICE_MS 50

extern char **environ;

enum submit_mode {
	MODE_SMTP,
	MODE_SENDMAIL,
};

struct submit {
	enum submit_mode mode;
	long timeout_ms;
	char *envelope_from; /* NULL: each call names one */
	/* SMTP */
	CURL *curl; /* kept between messages: one session per series */
	char *url;
	int starttls;
	char *ca_file;
	char *username;
	char *password; /* wiped on free */
	char errbuf[CURL_ERROR_SIZE];
	/* sendmail: program and fixed arguments */
	struct strlist args;
};

/*
 * Results
 */

void submit_result_init(struct submit_result *res)
{
	memset(res, 0, sizeof(*res));
	res->status = SUBMIT_TEMPFAIL;
	strlist_init(&res->refused);
}

void submit_result_release(struct submit_result *res)
{
	strlist_release(&res->refused);
	submit_result_init(res);
}

const char *submit_status_name(enum submit_status st)
{
	switch (st) {
	case SUBMIT_ACCEPTED:
		return "accepted";
	case SUBMIT_TEMPFAIL:
		return "tempfail";
	case SUBMIT_REJECTED:
		return "rejected";
	case SUBMIT_UNKNOWN:
		return "unknown";
	}
	return "?";
}

/* The return code that goes with a status (see the table in submit.h). */
static int status_rc(enum submit_status st)
{
	switch (st) {
	case SUBMIT_ACCEPTED:
		return 0;
	case SUBMIT_REJECTED:
		return PB_EINVAL;
	case SUBMIT_TEMPFAIL:
	case SUBMIT_UNKNOWN:
		return PB_ETEMP;
	}
	return PB_ERROR;
}

static const char *or_null(const char *s)
{
	return s && *s ? s : NULL;
}

void submit_opts_from_config(struct submit_opts *opts, const struct config *cfg)
{
	memset(opts, 0, sizeof(*opts));
	opts->url = config_str(cfg, CFG_SMTP_URL);
	opts->starttls = config_bool(cfg, CFG_SMTP_STARTTLS);
	opts->ca_file = or_null(config_str(cfg, CFG_SMTP_CA_FILE));
	opts->sendmail_path = config_str(cfg, CFG_SMTP_SENDMAIL_PATH);
	opts->username = or_null(config_str(cfg, CFG_SMTP_USERNAME));
	opts->timeout_ms = (long)config_duration_ms(cfg, CFG_SMTP_TIMEOUT);
	opts->envelope_from = or_null(config_str(cfg, CFG_BRIDGE_ADDRESS));
}

/*
 * Pure helpers
 */

/* RFC 5322 3.2.3 atext. */
static int is_atext(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c && strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL;
}

static int is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

/* A DNS name (RFC 1035 2.3.1, digits allowed first as RFC 1123 says). */
static int domain_ok(const char *d, size_t len)
{
	size_t i, label = 0;

	if (!len || len > DOMAIN_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		int c = (unsigned char)d[i];

		if (c == '.') {
			if (!label || d[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!is_alnum(c) && c != '-')
			return 0;
		if (c == '-' && !label)
			return 0;
		if (++label > LABEL_MAX)
			return 0;
	}
	return label && d[len - 1] != '-';
}

/* An address literal, loosely (RFC 5321 4.1.3): [1.2.3.4], [IPv6:...]. */
static int literal_ok(const char *d, size_t len)
{
	size_t i;

	if (len < 3 || d[0] != '[' || d[len - 1] != ']')
		return 0;
	for (i = 1; i < len - 1; i++)
		if (!is_alnum((unsigned char)d[i]) && d[i] != '.' &&
		    d[i] != ':')
			return 0;
	return 1;
}

int submit_addr_check(const char *addr)
{
	const char *at;
	size_t len, local, i;

	if (!addr || !*addr)
		return err_set(PB_EINVAL, "empty envelope address");
	len = strlen(addr);
	if (len > PB_ADDR_MAX)
		return err_set(PB_EINVAL,
			       "envelope address longer than %d "
			       "bytes",
			       PB_ADDR_MAX);
	at = strrchr(addr, '@');
	if (!at)
		return err_set(PB_EINVAL, "envelope address without @");
	local = (size_t)(at - addr);
	if (!local || local > LOCAL_PART_MAX)
		return err_set(PB_EINVAL,
			       "envelope address: local part "
			       "empty or longer than %d bytes",
			       LOCAL_PART_MAX);
	/* Dot-atom: atext runs separated by single dots. */
	for (i = 0; i < local; i++) {
		int c = (unsigned char)addr[i];

		if (c == '.') {
			if (i == 0 || i == local - 1 || addr[i - 1] == '.')
				return err_set(PB_EINVAL,
					       "envelope address: misplaced "
					       "dot in the local part");
			continue;
		}
		if (!is_atext(c))
			return err_set(PB_EINVAL,
				       "envelope address: byte 0x%02x not "
				       "allowed in the local part",
				       (unsigned)c);
	}
	if (!domain_ok(at + 1, len - local - 1) &&
	    !literal_ok(at + 1, len - local - 1))
		return err_set(PB_EINVAL, "envelope address: bad domain");
	return 0;
}

int submit_canon(struct buf *out, const char *msg, size_t len, int crlf)
{
	const char *p = msg, *end = msg + len;
	size_t lineno = 0;
	int rc;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		size_t n;

		lineno++;
		/* CR LF is one line end; a CR anywhere else is data. */
		if (nl && stop > p && stop[-1] == '\r')
			stop--;
		n = (size_t)(stop - p);
		if (memchr(p, '\0', n))
			return err_set(PB_EINVAL,
				       "message line %zu holds a "
				       "NUL byte",
				       lineno);
		if (n > SUBMIT_LINE_MAX)
			return err_set(PB_EINVAL,
				       "message line %zu is %zu bytes long; "
				       "the limit is %d (RFC 5322 2.1.1)",
				       lineno, n, SUBMIT_LINE_MAX);
		rc = buf_add(out, p, n);
		if (!rc)
			rc = crlf ? buf_add(out, "\r\n", 2) :
				    buf_addch(out, '\n');
		if (rc)
			return err_set(rc, "message larger than %zu bytes",
				       out->max);
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int submit_reply_line(int *code, int *last, const char *line, size_t len)
{
	if (len < 3 || line[0] < '2' || line[0] > '5' || line[1] < '0' ||
	    line[1] > '9' || line[2] < '0' || line[2] > '9')
		return PB_EINVAL;
	*code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + line[2] - '0';
	if (len == 3 || line[3] == ' ') {
		*last = 1;
		return 0;
	}
	if (line[3] == '-') {
		*last = 0;
		return 0;
	}
	return PB_EINVAL;
}

static int is_qid_char(int c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_';
}

static const char *find_icase(const char *hay, size_t haylen,
			      const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = 0; i + n <= haylen; i++)
		if (mem_eq_icase(hay + i, n, needle))
			return hay + i;
	return NULL;
}

/* Copy the id token at p (up to end) if it looks like one. */
static int take_qid(char *out, size_t size, const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && is_qid_char((unsigned char)p[n]))
		n++;
	if (!n || n > SUBMIT_QUEUE_ID_MAX || n >= size)
		return PB_ENOTFOUND;
	/* A word boundary must follow: "ABC123," is fine, "ABC@x" not. */
	if (p + n < end && p[n] != ' ' && p[n] != '\t' && p[n] != ',' &&
	    p[n] != ';' && p[n] != ')')
		return PB_ENOTFOUND;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

int submit_queue_id(char *out, size_t size, const char *text, size_t len)
{
	const char *end = text + len, *p, *w;

	out[0] = '\0';
	/* Postfix cleanup: "250 2.0.0 Ok: queued as 4Ab1Cd2Ef3". */
	p = find_icase(text, len, "queued as ");
	if (p)
		return take_qid(out, size, p + 10, end);
	/* Exim: "250 OK id=1q2w3e-000abc-Xy". */
	for (p = text; (p = find_icase(p, (size_t)(end - p), "id=")); p++)
		if (p == text || p[-1] == ' ')
			return take_qid(out, size, p + 3, end);
	/* Sendmail: "250 2.0.0 3AB1cD9x012345 Message accepted for
	 * delivery": the word before the phrase, unless that is the
	 * enhanced status code. */
	p = find_icase(text, len, " message accepted for delivery");
	if (!p)
		return PB_ENOTFOUND;
	w = p;
	while (w > text && w[-1] != ' ')
		w--;
	if (w == p || strspn(w, "0123456789.") >= (size_t)(p - w))
		return PB_ENOTFOUND;
	return take_qid(out, size, w, p);
}

enum submit_status submit_exit_status(int exit_code)
{
	switch (exit_code) {
	case EX_OK:
		return SUBMIT_ACCEPTED;
	/* Postfix's sys_exits table: the two with a 4.x.x DSN. */
	case EX_TEMPFAIL:
	case EX_OSERR:
		return SUBMIT_TEMPFAIL;
	default:
		/* Postfix too reads an unknown code as permanent (5.3.0). */
		return SUBMIT_REJECTED;
	}
}

int submit_split_args(struct strlist *out, const char *path)
{
	const char *p = path;

	while (p && *p) {
		size_t n;

		p += strspn(p, " \t");
		n = strcspn(p, " \t");
		if (!n)
			break;
		if (out->nr >= SUBMIT_SENDMAIL_ARGS_MAX)
			return err_set(PB_EINVAL,
				       "sendmail_path has more than "
				       "%d words",
				       SUBMIT_SENDMAIL_ARGS_MAX);
		strlist_pushn(out, p, n);
		p += n;
	}
	if (!out->nr)
		return err_set(PB_EINVAL, "sendmail_path is empty");
	if (out->items[0][0] != '/')
		return err_set(PB_EINVAL, "sendmail_path must start with an "
					  "absolute program name");
	return 0;
}

void submit_message_id(char *out, size_t size, const char *msg, size_t len)
{
	struct scan s;
	const char *line, *v = NULL;
	size_t n, vlen = 0;
	int folded = 0; /* "Message-ID:" alone; the id is on the next line */

	out[0] = '\0';
	scan_init(&s, msg, len);
	while (!vlen && scan_line(&s, &line, &n) && n) {
		struct scan h;

		if (folded) {
			if (line[0] != ' ' && line[0] != '\t')
				break;
			v = line;
			vlen = n;
		} else {
			scan_init(&h, line, n);
			if (!scan_lit_icase(&h, "message-id:"))
				continue;
			v = h.p;
			vlen = scan_left(&h);
			folded = 1;
		}
		mem_trim(&v, &vlen);
	}
	if (vlen)
		printable_copy(out, size, v, vlen);
}

/*
 * Creating and freeing
 */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The host part of an smtp[s]:// URL is a loopback address. */
static int url_is_loopback(const char *url)
{
	const char *h = strstr(url, "://");
	size_t n;

	if (!h)
		return 0;
	h += 3;
	if (*h == '[')
		return !strncmp(h, "[::1]", 5) &&
		       (h[5] == '\0' || h[5] == ':' || h[5] == '/');
	n = strcspn(h, ":/");
	if (n == 9 && mem_eq_icase(h, n, "localhost"))
		return 1;
	/* 127.0.0.0/8, written as a dotted quad. */
	return n >= 7 && !strncmp(h, "127.", 4) &&
	       strspn(h, "0123456789.") == n;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* What any SMTP connection of ours has: the protocols, the URL, TLS. */
static int smtp_connection(CURL *k, const char *url, int starttls,
			   const char *ca_file, char *errbuf)
{
	curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
#else
	curl_easy_setopt(k, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_SMTP | CURLPROTO_SMTPS));
#endif
	curl_easy_setopt(k, CURLOPT_ERRORBUFFER, errbuf);
	if (curl_easy_setopt(k, CURLOPT_URL, url) != CURLE_OK)
		return -1;
	curl_easy_setopt(k, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (starttls)
		curl_easy_setopt(k, CURLOPT_USE_SSL, (long)CURLUSESSL_ALL);
	if (ca_file)
		curl_easy_setopt(k, CURLOPT_CAINFO, ca_file);
	return 0;
}

static int smtp_setup(struct submit *s)
{
	CURL *k;

	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return err_set(PB_ERROR, "curl_global_init: %s",
			       curl_easy_strerror(global_rc));
	k = s->curl = curl_easy_init();
	if (!k)
		return err_set(PB_ERROR, "curl_easy_init failed");
	/* Nothing here varies between messages. */
	if (smtp_connection(k, s->url, s->starttls, s->ca_file, s->errbuf))
		return err_set(PB_EINVAL, "bad SMTP URL");
	if (s->username) {
		curl_easy_setopt(k, CURLOPT_USERNAME, s->username);
		curl_easy_setopt(k, CURLOPT_PASSWORD, s->password);
	}
	curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, s->timeout_ms);
	/* Also bounds the wait for the reply to QUIT when the handle goes. */
	curl_easy_setopt(k, CURLOPT_SERVER_RESPONSE_TIMEOUT,
			 (long)(s->timeout_ms + 999) / 1000);
	curl_easy_setopt(k, CURLOPT_UPLOAD, 1L);
	/* A bad Cc must not hold back the list copy: see submit.h. */
	curl_easy_setopt(k, PB_CURLOPT_RCPT_ALLOWFAILS, 1L);
	return 0;
}

int submit_new(struct submit **out, const struct submit_opts *opts)
{
	struct submit *s;
	int rc;

	*out = NULL;
	if (opts->timeout_ms < 0)
		return err_set(PB_EINVAL, "negative submission timeout");
	if (!opts->username != !opts->password)
		return err_set(PB_EINVAL, "SMTP username and password go "
					  "together");
	if (opts->envelope_from && submit_addr_check(opts->envelope_from))
		return err_prefix(PB_EINVAL, "envelope sender");

	s = xcalloc(1, sizeof(*s));
	strlist_init(&s->args);
	s->timeout_ms = opts->timeout_ms ? opts->timeout_ms :
					   SUBMIT_DEFAULT_TIMEOUT_MS;
	s->envelope_from = opts->envelope_from ? xstrdup(opts->envelope_from) :
						 NULL;

	if (!opts->url || !strcmp(opts->url, "sendmail")) {
		s->mode = MODE_SENDMAIL;
		rc = submit_split_args(&s->args,
				       opts->sendmail_path ?
					       opts->sendmail_path :
					       SUBMIT_DEFAULT_SENDMAIL);
		if (!rc && opts->username)
			rc = err_set(PB_EINVAL, "SMTP AUTH needs an smtp:// or "
						"smtps:// url, not sendmail");
		goto out;
	}

	s->mode = MODE_SMTP;
	if (!strncasecmp(opts->url, "smtps://", 8)) {
		if (opts->starttls) {
			rc = err_set(PB_EINVAL, "starttls is for smtp:// "
						"URLs; smtps:// is TLS from "
						"the start");
			goto out;
		}
	} else if (strncasecmp(opts->url, "smtp://", 7)) {
		rc = err_set(PB_EINVAL, "the mailer must be sendmail or an "
					"smtp:// or smtps:// URL");
		goto out;
	}
	if (strpbrk(opts->url, " \t\r\n")) {
		rc = err_set(PB_EINVAL, "blank or line end in the SMTP URL");
		goto out;
	}
	s->url = xstrdup(opts->url);
	s->starttls = opts->starttls;
	s->ca_file = opts->ca_file ? xstrdup(opts->ca_file) : NULL;
	/*
	 * AUTH PLAIN and LOGIN carry the password as base64: refuse to send
	 * it in clear anywhere but to this host.
	 */
	if (opts->username && !s->starttls && strncasecmp(s->url, "smtps", 5) &&
	    !url_is_loopback(s->url)) {
		rc = err_set(PB_EINVAL, "refusing to send the SMTP password "
					"in clear text: use an smtps:// url "
					"or starttls");
		goto out;
	}
	if (opts->username) {
		s->username = xstrdup(opts->username);
		s->password = xstrdup(opts->password);
	}
	rc = smtp_setup(s);
out:
	if (rc) {
		submit_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int submit_probe(const struct submit_opts *opts, long timeout_ms)
{
	struct strlist args = STRLIST_INIT;
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *k;
	CURLcode cc;
	long code = 0;
	int rc;

	if (!opts->url || !strcmp(opts->url, "sendmail")) {
		rc = submit_split_args(&args, opts->sendmail_path ?
						      opts->sendmail_path :
						      SUBMIT_DEFAULT_SENDMAIL);
		if (!rc && access(args.items[0], X_OK) < 0)
			rc = err_set_errno(PB_ETEMP, "%s", args.items[0]);
		strlist_release(&args);
		return rc ? PB_ETEMP : 0;
	}
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return err_set(PB_ETEMP, "curl_global_init: %s",
			       curl_easy_strerror(global_rc));
	k = curl_easy_init();
	if (!k)
		return err_set(PB_ETEMP, "curl_easy_init failed");
	if (smtp_connection(k, opts->url, opts->starttls, opts->ca_file,
			    errbuf)) {
		curl_easy_cleanup(k);
		return err_set(PB_ETEMP, "bad SMTP URL");
	}
	curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(k, CURLOPT_SERVER_RESPONSE_TIMEOUT,
			 (timeout_ms + 999) / 1000);
	/* Without MAIL FROM or an upload libcurl sends this command, after
	 * the greeting and EHLO (RFC 5321 4.1.1.9: NOOP, always 250). */
	curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST, "NOOP");
	curl_easy_setopt(k, CURLOPT_NOBODY, 1L);
	cc = curl_easy_perform(k);
	curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(k);
	if (cc != CURLE_OK)
		return err_set(PB_ETEMP, "%s: %s", opts->url,
			       errbuf[0] ? errbuf : curl_easy_strerror(cc));
	if (code != 250)
		return err_set(PB_ETEMP, "%s: NOOP answered %ld", opts->url,
			       code);
	return 0;
}

void submit_free(struct submit *s)
{
	if (!s)
		return;
	if (s->curl)
		curl_easy_cleanup(s->curl);
	free(s->envelope_from);
	free(s->url);
	free(s->ca_file);
	free(s->username);
	wipe_free(s->password);
	strlist_release(&s->args);
	free(s);
}

/*
 * SMTP through libcurl
 *
 * libcurl runs the dialogue; its debug callback shows us each command
 * line we send (CURLINFO_HEADER_OUT) and each reply line (HEADER_IN), so
 * every reply is matched with its command: a refused RCPT names its
 * recipient, and the reply to the end of data is told apart from all
 * others.  The callback keeps only reply text and command verbs, never
 * an AUTH line.
 */

enum smtp_cmd {
	CMD_NONE, /* greeting, EHLO, STARTTLS, ... */
	CMD_EHLO, /* EHLO or HELO: a new session */
	CMD_AUTH, /* AUTH and the client's SASL responses */
	CMD_MAIL,
	CMD_RCPT,
	CMD_DATA,
	CMD_DOT, /* the end of data */
	CMD_QUIT, /* its reply changes nothing */
};

struct smtp_xfer {
	int need_auth; /* credentials are configured */
	const struct strlist *rcpts;
	struct submit_result *res;
	/* the upload */
	const char *data;
	size_t len, off;
	int eod; /* every byte handed to libcurl: the "." follows */
	/* the dialogue */
	enum smtp_cmd cmd; /* the command the next reply answers */
	int out_partial; /* the last command line was not complete */
	size_t rcpt_sent; /* RCPT commands sent */
	size_t rcpt_at; /* index of the recipient of the last RCPT */
	size_t rcpt_ok, rcpt_temp, rcpt_perm;
	int new_session; /* this transfer opened the connection */
	int authed; /* 235 to AUTH in this session */
	int sasl_more; /* 334: the next line we send is a SASL response */
	/* the reply being read, and the last complete one */
	char line[SUBMIT_REPLY_MAX + 1];
	size_t line_len;
	char text[SUBMIT_REPLY_MAX + 1];
	size_t text_len;
	int in_reply; /* continuation lines seen, final not yet */
	int last_code;
	enum smtp_cmd last_cmd;
	char last_text[SUBMIT_REPLY_MAX + 1];
	int final_code; /* the reply to the end of data; 0: none */
};

static size_t smtp_read(char *dst, size_t size, size_t nmemb, void *arg)
{
	struct smtp_xfer *x = arg;
	size_t n = size * nmemb, left = x->len - x->off;

	/*
	 * libcurl skips AUTH when the server does not offer it; with
	 * credentials configured that is a misconfigured or tampered-with
	 * session: stop before the data, so nothing is accepted.
	 */
	if (x->need_auth && x->new_session && !x->authed)
		return CURL_READFUNC_ABORT;
	if (n > left)
		n = left;
	memcpy(dst, x->data + x->off, n);
	x->off += n;
	if (x->off == x->len && !x->eod) {
		x->eod = 1;
		x->cmd = CMD_DOT;
	}
	return n;
}

static void smtp_sent(struct smtp_xfer *x, const char *p, size_t n)
{
	int cont = x->out_partial;

	x->out_partial = n && p[n - 1] != '\n';
	/* A SASL response is base64 and could look like a command. */
	if (cont || (x->cmd == CMD_AUTH && x->sasl_more))
		return;
	if (n >= 5 && mem_eq_icase(p, 5, "MAIL ")) {
		x->cmd = CMD_MAIL;
	} else if (n >= 5 && mem_eq_icase(p, 5, "RCPT ")) {
		x->cmd = CMD_RCPT;
		x->rcpt_at = x->rcpt_sent++;
	} else if (n >= 4 && mem_eq_icase(p, 4, "DATA")) {
		x->cmd = CMD_DATA;
	} else if (n >= 4 && mem_eq_icase(p, 4, "QUIT")) {
		x->cmd = CMD_QUIT;
	} else if (n >= 4 &&
		   (mem_eq_icase(p, 4, "EHLO") || mem_eq_icase(p, 4, "HELO"))) {
		x->cmd = CMD_EHLO;
		x->new_session = 1;
		x->authed = 0;
	} else if (n >= 5 && mem_eq_icase(p, 5, "AUTH ")) {
		x->cmd = CMD_AUTH;
	} else {
		x->cmd = CMD_NONE;
	}
}

static void text_add(char *dst, size_t *len, const char *p, size_t n)
{
	size_t room = SUBMIT_REPLY_MAX - *len;

	if (n > room)
		n = room;
	memcpy(dst + *len, p, n);
	*len += n;
	dst[*len] = '\0';
}

/* A complete reply arrived: text[] holds it, "250 2.0.0 Ok: ...". */
static void smtp_reply(struct smtp_xfer *x, int code)
{
	char shown[SUBMIT_REPLY_MAX + 1];

	/* libcurl says QUIT after a failure: keep the reply that failed. */
	if (x->cmd == CMD_QUIT)
		return;
	printable_copy(shown, sizeof(shown), x->text, x->text_len);
	x->last_code = code;
	x->last_cmd = x->cmd;
	memcpy(x->last_text, shown, sizeof(shown));
	switch (x->cmd) {
	case CMD_RCPT:
		if (code / 100 == 2) {
			x->rcpt_ok++;
			break;
		}
		if (code / 100 == 4)
			x->rcpt_temp++;
		else
			x->rcpt_perm++;
		if (x->rcpt_at < x->rcpts->nr)
			strlist_pushf(&x->res->refused, "%s: %s",
				      x->rcpts->items[x->rcpt_at], shown);
		break;
	case CMD_DOT:
		x->final_code = code;
		break;
	case CMD_AUTH:
		x->authed = code == 235;
		x->sasl_more = code == 334;
		break;
	default:
		break;
	}
}

static void smtp_line(struct smtp_xfer *x, const char *p, size_t n)
{
	int code, last;

	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (submit_reply_line(&code, &last, p, n)) {
		/* Not SMTP: keep it for the error message only. */
		x->text_len = 0;
		text_add(x->text, &x->text_len, p, n);
		x->in_reply = 0;
		return;
	}
	if (!x->in_reply) {
		x->text_len = 0;
		text_add(x->text, &x->text_len, p, n);
	} else if (n > 4) {
		text_add(x->text, &x->text_len, " ", 1);
		text_add(x->text, &x->text_len, p + 4, n - 4);
	}
	x->in_reply = !last;
	if (last)
		smtp_reply(x, code);
}

static void smtp_received(struct smtp_xfer *x, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) + 1 : n;
		size_t room = SUBMIT_REPLY_MAX - x->line_len;
		size_t keep = take < room ? take : room;

		memcpy(x->line + x->line_len, p, keep);
		x->line_len += keep;
		if (nl) {
			smtp_line(x, x->line, x->line_len);
			x->line_len = 0;
		}
		p += take;
		n -= take;
	}
}

static int smtp_debug(CURL *k, curl_infotype type, char *p, size_t n, void *arg)
{
	(void)k;
	if (type == CURLINFO_HEADER_OUT)
		smtp_sent(arg, p, n);
	else if (type == CURLINFO_HEADER_IN)
		smtp_received(arg, p, n);
	return 0;
}

static const char *cmd_name(enum smtp_cmd c)
{
	switch (c) {
	case CMD_MAIL:
		return "MAIL FROM";
	case CMD_RCPT:
		return "RCPT TO";
	case CMD_DATA:
		return "DATA";
	case CMD_DOT:
		return "end of data";
	case CMD_AUTH:
		return "AUTH";
	case CMD_NONE:
	case CMD_EHLO:
	case CMD_QUIT:
		break;
	}
	return "session";
}

/* Decide what happened; see the table in submit.h. */
static int smtp_verdict(struct submit_result *res, struct submit *s,
			struct smtp_xfer *x, CURLcode cc)
{
	const char *why = s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc);
	int c;

	if (x->final_code) {
		c = x->final_code;
		res->code = c;
		snprintf(res->reply, sizeof(res->reply), "%s", x->last_text);
		/* 250 and nothing else (RFC 5321 4.3.2); what libcurl
		 * thinks of the QUIT after it does not matter. */
		if (c == 250) {
			submit_queue_id(res->queue_id, sizeof(res->queue_id),
					x->last_text, strlen(x->last_text));
			res->status = SUBMIT_ACCEPTED;
			return 0;
		}
		res->status = c / 100 == 4 ? SUBMIT_TEMPFAIL :
			      c / 100 == 5 ? SUBMIT_REJECTED :
					     SUBMIT_UNKNOWN;
		return err_set(status_rc(res->status), "SMTP end of data: %s",
			       res->reply);
	}
	if (x->eod) {
		/* The whole message went; the verdict did not come. */
		res->status = SUBMIT_UNKNOWN;
		res->code = 0;
		return err_set(PB_ETEMP,
			       "SMTP: no reply to the end of data, "
			       "the message may have been accepted: "
			       "%s",
			       why);
	}
	if (x->need_auth && x->new_session && !x->authed &&
	    x->last_cmd != CMD_AUTH) {
		res->status = SUBMIT_TEMPFAIL;
		return err_set(PB_ETEMP, "SMTP: the server offered no AUTH; "
					 "nothing sent without it");
	}
	c = x->last_code / 100;
	/* Only a refusal decides; after a 2xx the transport failed. */
	if (c == 4 || c == 5) {
		res->code = x->last_code;
		snprintf(res->reply, sizeof(res->reply), "%s", x->last_text);
	}
	switch (x->last_cmd) {
	case CMD_MAIL:
	case CMD_DATA:
		/* 530: authentication required (RFC 4954 6), a matter of
		 * the session and its configuration, not of the message. */
		if (c == 5 && x->last_code != 530) {
			res->status = SUBMIT_REJECTED;
			break;
		}
		res->status = SUBMIT_TEMPFAIL;
		break;
	case CMD_RCPT:
		/* libcurl gives up when no recipient was accepted. */
		res->status = x->rcpt_perm == x->rcpts->nr ? SUBMIT_REJECTED :
							     SUBMIT_TEMPFAIL;
		break;
	default:
		res->status = SUBMIT_TEMPFAIL;
		break;
	}
	if (c == 4 || c == 5)
		return err_set(status_rc(res->status), "SMTP %s: %s",
			       cmd_name(x->last_cmd), res->reply);
	return err_set(status_rc(res->status), "SMTP: %s", why);
}

/*
 * After a failure the session is in no known state: a late reply to the
 * end of data would be read as the answer to the next MAIL.  libcurl may
 * keep such a connection, and says QUIT on it when it closes it, waiting
 * on a server that does not answer.  Cut it; the next message opens a
 * new session.
 */
static void smtp_hangup(CURL *k)
{
	curl_socket_t fd = CURL_SOCKET_BAD;

	if (curl_easy_getinfo(k, CURLINFO_ACTIVESOCKET, &fd) == CURLE_OK &&
	    fd != CURL_SOCKET_BAD)
		shutdown(fd, SHUT_RDWR);
}

static int smtp_send(struct submit_result *res, struct submit *s,
		     const char *from, const struct strlist *rcpts,
		     const char *msg, size_t len)
{
	struct buf data = BUF_INIT(2 * len + 2);
	struct curl_slist *to = NULL;
	struct smtp_xfer x;
	char *mail_from = NULL;
	CURL *k = s->curl;
	CURLcode cc;
	size_t i;
	int rc;

	rc = submit_canon(&data, msg, len, 1);
	if (rc) {
		res->status = SUBMIT_REJECTED;
		rc = PB_EINVAL;
		goto out;
	}
	memset(&x, 0, sizeof(x));
	x.need_auth = s->username != NULL;
	x.rcpts = rcpts;
	x.res = res;
	x.data = data.data;
	x.len = data.len;

	mail_from = xasprintf("<%s>", from);
	strlist_for_each (rcpts, i) {
		char *a = xasprintf("<%s>", rcpts->items[i]);
		struct curl_slist *t = curl_slist_append(to, a);

		free(a);
		if (!t) {
			rc = err_set(PB_ETEMP, "out of memory for recipients");
			goto out;
		}
		to = t;
	}
	s->errbuf[0] = '\0';
	curl_easy_setopt(k, CURLOPT_MAIL_FROM, mail_from);
	curl_easy_setopt(k, CURLOPT_MAIL_RCPT, to);
	curl_easy_setopt(k, CURLOPT_READFUNCTION, smtp_read);
	curl_easy_setopt(k, CURLOPT_READDATA, &x);
	curl_easy_setopt(k, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x.len);
	/* Verbose only feeds smtp_debug; libcurl prints nothing itself. */
	curl_easy_setopt(k, CURLOPT_DEBUGFUNCTION, smtp_debug);
	curl_easy_setopt(k, CURLOPT_DEBUGDATA, &x);
	curl_easy_setopt(k, CURLOPT_VERBOSE, 1L);

	cc = curl_easy_perform(k);
	rc = smtp_verdict(res, s, &x, cc);
	if (rc)
		smtp_hangup(k);

	/* Nothing may point at this call's memory once it returns. */
	curl_easy_setopt(k, CURLOPT_MAIL_RCPT, NULL);
	curl_easy_setopt(k, CURLOPT_MAIL_FROM, NULL);
	curl_easy_setopt(k, CURLOPT_READDATA, NULL);
	curl_easy_setopt(k, CURLOPT_DEBUGDATA, NULL);
	curl_easy_setopt(k, CURLOPT_VERBOSE, 0L);
out:
	curl_slist_free_all(to);
	free(mail_from);
	buf_release(&data);
	return rc;
}

/*
 * The sendmail pipe
 */

/* Wait for pid until deadline; 1 when it was reaped. */
static int reap_until(pid_t pid, int *wst, long deadline)
{
	for (;;) {
		pid_t r = waitpid(pid, wst, WNOHANG);
		struct timespec ts = { 0, 10 * 1000000L };

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1; /* not ours any more: nothing to wait for */
		if (now_ms() >= deadline)
			return 0;
		nanosleep(&ts, NULL);
	}
}

static int spawn(pid_t *pid, char **argv, int in_fd, int out_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
	/*
	 * Its own process group, so a timeout kills what it started too
	 * (Postfix's sendmail runs postdrop); default signal handling and
	 * an empty mask whatever this thread has.
	 */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSIGDEF |
						POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(pid, argv[0], &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/* stderr as one printable line. */
static void stderr_text(char *out, size_t size, struct buf *err)
{
	size_t i;

	buf_rtrim(err);
	for (i = 0; i < err->len; i++)
		if (err->data[i] == '\n' || err->data[i] == '\t')
			err->data[i] = ' ';
	printable_copy(out, size, err->data, err->len);
}

struct pipe_run {
	const char *data;
	size_t len, off;
	int in, err; /* our ends; -1 once closed */
	int broken; /* EPIPE: it stopped reading */
	int all_written;
	struct buf errout;
};

/*
 * Feed stdin and read stderr until the child exits (1), time is up (0),
 * or it cannot be waited for (-1: SIGCHLD ignored, so it was reaped
 * behind our back).
 */
static int pipe_pump(struct pipe_run *r, pid_t pid, int *wst, long deadline)
{
	for (;;) {
		struct pollfd fds[2];
		nfds_t nfds = 0;
		pid_t w;
		long left;

		w = waitpid(pid, wst, WNOHANG);
		if (w == pid) {
			if (r->err >= 0)
				fd_drain(&r->errout, r->err, NULL);
			return 1;
		}
		if (w < 0 && errno != EINTR)
			return -1;
		left = deadline - now_ms();
		if (left <= 0)
			return 0;
		if (r->in >= 0)
			fds[nfds++] = (struct pollfd){ r->in, POLLOUT, 0 };
		if (r->err >= 0)
			fds[nfds++] = (struct pollfd){ r->err, POLLIN, 0 };
		if (poll(fds, nfds,
			 left < POLL_SLICE_MS ? (int)left : POLL_SLICE_MS) <
			    0 &&
		    errno != EINTR)
			return 0;
		if (r->in >= 0 && fds[0].revents) {
			ssize_t n =
				write(r->in, r->data + r->off, r->len - r->off);

			if (n > 0)
				r->off += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				r->broken = 1;
			if (r->broken || r->off == r->len) {
				r->all_written = !r->broken;
				close(r->in);
				r->in = -1;
			}
		}
		if (r->err >= 0 && fds[nfds - 1].revents &&
		    !fd_drain(&r->errout, r->err, NULL)) {
			close(r->err);
			r->err = -1;
		}
	}
}

static int sendmail_send(struct submit_result *res, struct submit *s,
			 const char *from, const struct strlist *rcpts,
			 const char *msg, size_t len)
{
	struct buf data = BUF_INIT(len + 1);
	struct pipe_run r = { .in = -1, .err = -1 };
	struct strlist argv = STRLIST_INIT;
	int in[2] = { -1, -1 }, err[2] = { -1, -1 };
	sigset_t sigpipe, old, pending;
	int wst = 0, done, rc, was_pending;
	pid_t pid;
	size_t i;

	buf_init(&r.errout, SUBMIT_STDERR_MAX);
	rc = submit_canon(&data, msg, len, 0);
	if (rc) {
		res->status = SUBMIT_REJECTED;
		rc = PB_EINVAL;
		goto out;
	}
	strlist_for_each (&s->args, i)
		strlist_push(&argv, s->args.items[i]);
	/* -oi: a "." line is data; "--": no recipient is an option. */
	strlist_push(&argv, "-oi");
	strlist_push(&argv, "-f");
	strlist_push(&argv, from);
	strlist_push(&argv, "--");
	strlist_for_each (rcpts, i)
		strlist_push(&argv, rcpts->items[i]);
	ALLOC_GROW(argv.items, argv.nr + 1, argv.alloc);
	argv.items[argv.nr] = NULL;

	if (pipe2(in, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		res->status = SUBMIT_TEMPFAIL;
		rc = err_set_errno(PB_ETEMP, "pipe");
		goto out;
	}
	rc = spawn(&pid, argv.items, in[0], err[1]);
	close(in[0]);
	close(err[1]);
	in[0] = err[1] = -1;
	if (rc) {
		errno = rc;
		res->status = SUBMIT_TEMPFAIL;
		res->code = -1;
		rc = err_set_errno(PB_ETEMP, "cannot run %s", argv.items[0]);
		goto out;
	}
	r.data = data.data;
	r.len = data.len;
	r.in = in[1];
	r.err = err[0];
	in[1] = err[0] = -1;
	fcntl(r.in, F_SETFL, fcntl(r.in, F_GETFL) | O_NONBLOCK);
	fcntl(r.err, F_SETFL, fcntl(r.err, F_GETFL) | O_NONBLOCK);
	if (!r.len) {
		close(r.in);
		r.in = -1;
		r.all_written = 1;
	}

	/* A reader that goes away must give EPIPE, not kill the daemon. */
	sigemptyset(&sigpipe);
	sigaddset(&sigpipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigpipe, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);

	done = pipe_pump(&r, pid, &wst, now_ms() + s->timeout_ms);
	if (done == 0) {
		kill(-pid, SIGTERM);
		if (!reap_until(pid, &wst, now_ms() + KILL_GRACE_MS)) {
			kill(-pid, SIGKILL);
			waitpid(pid, &wst, 0);
		}
	}

	sigpending(&pending);
	if (!was_pending && sigismember(&pending, SIGPIPE)) {
		struct timespec zero = { 0, 0 };

		sigtimedwait(&sigpipe, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	stderr_text(res->reply, sizeof(res->reply), &r.errout);
	if (done < 0) {
		res->status = r.all_written ? SUBMIT_UNKNOWN : SUBMIT_TEMPFAIL;
		res->code = -1;
		rc = err_set(PB_ETEMP,
			     "cannot wait for %s (is SIGCHLD "
			     "ignored?)",
			     argv.items[0]);
	} else if (!done) {
		res->status = r.all_written ? SUBMIT_UNKNOWN : SUBMIT_TEMPFAIL;
		res->code = -1;
		rc = err_set(PB_ETEMP,
			     "%s did not finish within %ld ms and "
			     "was killed%s",
			     argv.items[0], s->timeout_ms,
			     r.all_written ? " after reading the whole "
					     "message" :
					     "");
	} else if (WIFSIGNALED(wst)) {
		res->status = r.all_written ? SUBMIT_UNKNOWN : SUBMIT_TEMPFAIL;
		res->code = -1;
		rc = err_set(PB_ETEMP, "%s killed by signal %d%s%s",
			     argv.items[0], WTERMSIG(wst),
			     res->reply[0] ? ": " : "", res->reply);
	} else {
		res->code = WEXITSTATUS(wst);
		res->status = submit_exit_status(res->code);
		if (res->status == SUBMIT_ACCEPTED && !r.all_written)
			res->status = SUBMIT_UNKNOWN;
		rc = status_rc(res->status);
		if (res->status == SUBMIT_UNKNOWN)
			rc = err_set(rc,
				     "%s exited 0 without reading the "
				     "whole message",
				     argv.items[0]);
		else if (rc)
			rc = err_set(rc, "%s exited with status %d%s%s",
				     argv.items[0], res->code,
				     res->reply[0] ? ": " : "", res->reply);
	}
out:
	for (i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (r.in >= 0)
		close(r.in);
	if (r.err >= 0)
		close(r.err);
	buf_release(&r.errout);
	buf_release(&data);
	strlist_release(&argv);
	return rc;
}

/*
 * Both
 */

static void log_result(struct submit *s, const struct submit_result *res,
		       const char *msg, size_t len, size_t nrcpt, int rc)
{
	char msgid[PB_LOG_QUOTE_MAX];
	size_t i;

	submit_message_id(msgid, sizeof(msgid), msg, len);
	if (!msgid[0])
		snprintf(msgid, sizeof(msgid), "(none)");
	if (res->status == SUBMIT_ACCEPTED)
		log_info("submit: message-id=%s via=%s rcpts=%zu refused=%zu "
			 "result=accepted queue_id=%s",
			 msgid, s->mode == MODE_SMTP ? "smtp" : "sendmail",
			 nrcpt, res->refused.nr,
			 res->queue_id[0] ? res->queue_id : "(none)");
	else
		log_warn("submit: message-id=%s via=%s rcpts=%zu result=%s "
			 "code=%d: %s",
			 msgid, s->mode == MODE_SMTP ? "smtp" : "sendmail",
			 nrcpt, submit_status_name(res->status), res->code,
			 rc ? err_msg() : "");
	strlist_for_each (&res->refused, i)
		log_warn("submit: message-id=%s refused %s", msgid,
			 res->refused.items[i]);
}

int submit_send(struct submit_result *res, struct submit *s,
		const char *envelope_from, const struct strlist *rcpts,
		const char *msg, size_t len)
{
	const char *from = envelope_from ? envelope_from : s->envelope_from;
	size_t i;
	int rc;

	strlist_release(&res->refused);
	submit_result_init(res);
	res->status = SUBMIT_REJECTED;
	if (!from) {
		rc = err_set(PB_EINVAL, "no envelope sender");
		goto out;
	}
	rc = submit_addr_check(from);
	if (rc) {
		err_prefix(rc, "envelope sender");
		goto out;
	}
	if (!rcpts || !rcpts->nr) {
		rc = err_set(PB_EINVAL, "no recipients");
		goto out;
	}
	strlist_for_each (rcpts, i) {
		rc = submit_addr_check(rcpts->items[i]);
		if (rc) {
			err_prefix(rc, "recipient %zu", i + 1);
			goto out;
		}
	}
	if (!len) {
		rc = err_set(PB_EINVAL, "empty message");
		goto out;
	}
	if (len > PB_MAIL_MAX_MAX) {
		rc = err_set(PB_EINVAL, "message larger than %d bytes",
			     PB_MAIL_MAX_MAX);
		goto out;
	}
	if (s->mode == MODE_SMTP)
		rc = smtp_send(res, s, from, rcpts, msg, len);
	else
		rc = sendmail_send(res, s, from, rcpts, msg, len);
out:
	log_result(s, res, msg, len, rcpts ? rcpts->nr : 0, rc);
	return rc;
}
