/* SPDY/3.1 session codec: see include/ursa/spdy.h for the contract. */
#include "ursa/spdy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "ursa/errors.h"
#include "ursa/xalloc.h"

/* ---- the SPDY/3 dictionary ---- */

/* The protocol's header dictionary: these words, each preceded by its big-endian u32 length,
 * then one run of common value fragments without length prefixes. */
static const char *const dict_words[] = {
	"options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
	"accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
	"content-base", "content-encoding", "content-language", "content-length", "content-location",
	"content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
	"if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
	"location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
	"retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
	"warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
	"public", "set-cookie", "keep-alive", "origin",
};
static const char dict_tail[] =
	"100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
	"203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
	"403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
	"Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
	"chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
	"text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

static unsigned char dict_bytes[1536];
static size_t dict_len;
static pthread_once_t dict_once = PTHREAD_ONCE_INIT;

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void dict_build(void)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof(dict_words) / sizeof(dict_words[0]); i++) {
		size_t l = strlen(dict_words[i]);
		put32(dict_bytes + n, (uint32_t)l);
		memcpy(dict_bytes + n + 4, dict_words[i], l);
		n += 4 + l;
	}
	memcpy(dict_bytes + n, dict_tail, sizeof(dict_tail) - 1);
	dict_len = n + sizeof(dict_tail) - 1;
}

const unsigned char *spdy_dictionary(size_t *ret_len)
{
	pthread_once(&dict_once, dict_build);
	*ret_len = dict_len;
	return dict_bytes;
}

/* ---- headers ---- */

const char *spdy_header_get(const struct spdy_header *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (h[i].name && strcasecmp(h[i].name, name) == 0)
			return h[i].value;
	return NULL;
}

struct spdy_limits spdy_limits_default(void)
{
	return (struct spdy_limits){
		.max_frame = (size_t)1 << 20,
		.max_header_block = (size_t)64 << 10,
		.max_headers = 128,
		.max_streams = 1024,
	};
}

/* ---- session state ---- */

struct stream {
	uint32_t id;
	bool ours;         /* we sent the SYN_STREAM */
	bool replied;      /* SYN_REPLY sent (peer's stream) or received (ours) */
	bool local_fin;
	bool remote_fin;
	int64_t send_window;
	uint64_t recv_pending; /* consumed bytes not yet credited with WINDOW_UPDATE */
};

struct spdy_session {
	enum spdy_role role;
	struct spdy_callbacks cb;
	void *ud;
	struct spdy_limits lim;
	unsigned flags;

	struct buf in;  /* bytes fed, not yet parsed (at most one partial frame after feed) */
	struct buf out; /* queued output from out_off on */
	size_t out_off;
	struct buf tmp; /* scratch: an uncompressed header block being built */
	struct buf hdr; /* scratch: an inflated header block, then the strings of the decoded headers */
	struct spdy_header *hv;
	size_t hv_alloc;

	z_stream zin, zout;
	bool zin_ready, zout_ready;

	struct stream *streams;
	size_t nstreams, astreams;
	uint32_t next_id;       /* our next stream id */
	uint32_t next_ping;
	uint32_t last_peer_id;  /* highest stream id the peer opened */
	int64_t session_send_window;
	uint64_t session_recv_pending;
	uint32_t peer_initial_window;

	int err;
	bool goaway_sent, goaway_recv;
};

struct spdy_session *spdy_session_new(enum spdy_role role, const struct spdy_callbacks *cb, void *ud,
				      const struct spdy_limits *limits, unsigned flags)
{
	struct spdy_session *s = xcalloc(1, sizeof(*s));
	s->role = role;
	if (cb)
		s->cb = *cb;
	s->ud = ud;
	s->lim = limits ? *limits : spdy_limits_default();
	s->flags = flags;
	s->next_id = role == SPDY_CLIENT ? 1 : 2;
	s->next_ping = role == SPDY_CLIENT ? 1 : 2;
	s->session_send_window = SPDY_INITIAL_WINDOW;
	s->peer_initial_window = SPDY_INITIAL_WINDOW;
	return s;
}

void spdy_session_free(struct spdy_session *s)
{
	if (!s)
		return;
	if (s->zin_ready)
		inflateEnd(&s->zin);
	if (s->zout_ready)
		deflateEnd(&s->zout);
	buf_release(&s->in);
	buf_release(&s->out);
	buf_release(&s->tmp);
	buf_release(&s->hdr);
	free(s->hv);
	free(s->streams);
	free(s);
}

static struct stream *find(const struct spdy_session *s, uint32_t id)
{
	for (size_t i = 0; i < s->nstreams; i++)
		if (s->streams[i].id == id)
			return &s->streams[i];
	return NULL;
}

static struct stream *add_stream(struct spdy_session *s, uint32_t id, bool ours)
{
	if (s->nstreams == s->astreams) {
		s->astreams = s->astreams ? s->astreams * 2 : 8;
		s->streams = xrealloc(s->streams, s->astreams * sizeof(*s->streams));
	}
	struct stream *st = &s->streams[s->nstreams++];
	memset(st, 0, sizeof(*st));
	st->id = id;
	st->ours = ours;
	st->send_window = s->peer_initial_window;
	return st;
}

static void remove_stream(struct spdy_session *s, uint32_t id)
{
	for (size_t i = 0; i < s->nstreams; i++) {
		if (s->streams[i].id == id) {
			s->streams[i] = s->streams[--s->nstreams];
			return;
		}
	}
}

static bool peer_id(const struct spdy_session *s, uint32_t id)
{
	/* client streams are odd */
	return (s->role == SPDY_SERVER) == ((id & 1) == 1);
}

/* ---- output ---- */

const char *spdy_session_output(struct spdy_session *s, size_t *ret_len)
{
	*ret_len = s->out.len - s->out_off;
	return *ret_len ? s->out.ptr + s->out_off : NULL;
}

void spdy_session_output_consumed(struct spdy_session *s, size_t n)
{
	if (n > s->out.len - s->out_off)
		n = s->out.len - s->out_off;
	s->out_off += n;
	if (s->out_off == s->out.len) {
		buf_reset(&s->out);
		s->out_off = 0;
	} else if (s->out_off > (64u << 10) && s->out_off * 2 > s->out.len) {
		memmove(s->out.ptr, s->out.ptr + s->out_off, s->out.len - s->out_off);
		s->out.len -= s->out_off;
		s->out.ptr[s->out.len] = '\0';
		s->out_off = 0;
	}
}

size_t spdy_session_output_len(const struct spdy_session *s)
{
	return s->out.len - s->out_off;
}

bool spdy_session_closing(const struct spdy_session *s)
{
	return s->err || s->goaway_sent || s->goaway_recv;
}

int spdy_session_error(const struct spdy_session *s)
{
	return s->err;
}

static void ctl_head(struct buf *b, enum spdy_frame_type type, uint8_t flags, size_t len)
{
	unsigned char h[8] = { 0x80, SPDY_VERSION, 0, (unsigned char)type, flags };
	h[5] = (unsigned char)(len >> 16);
	h[6] = (unsigned char)(len >> 8);
	h[7] = (unsigned char)len;
	buf_add(b, h, sizeof(h));
}

static void add32(struct buf *b, uint32_t v)
{
	unsigned char p[4];
	put32(p, v);
	buf_add(b, p, 4);
}

static void queue_u32_pair(struct spdy_session *s, enum spdy_frame_type type, uint32_t a, uint32_t b)
{
	ctl_head(&s->out, type, 0, 8);
	add32(&s->out, a);
	add32(&s->out, b);
}

static void queue_rst(struct spdy_session *s, uint32_t id, uint32_t status)
{
	queue_u32_pair(s, SPDY_RST_STREAM, id & 0x7fffffff, status);
}

/* Kills the session: GOAWAY(PROTOCOL_ERROR) queued once, err kept for every later call. */
static int fail(struct spdy_session *s, int err)
{
	if (!s->err) {
		s->err = err;
		if (!s->goaway_sent)
			queue_u32_pair(s, SPDY_GOAWAY, s->last_peer_id, SPDY_GOAWAY_PROTOCOL_ERROR);
		s->goaway_sent = true;
	}
	return s->err;
}

/* ---- header blocks ---- */

/* Appends the compressed form of h[0..n) to out. 0 or E_INVALID (empty name, value too long). */
static int encode_headers(struct spdy_session *s, const struct spdy_header *h, size_t n, struct buf *out)
{
	if (n > s->lim.max_headers)
		return E_INVALID;
	buf_reset(&s->tmp);
	add32(&s->tmp, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		size_t nl = h[i].name ? strlen(h[i].name) : 0;
		size_t vl = h[i].value ? strlen(h[i].value) : 0;
		if (nl == 0 || nl > 0xffff || vl > (1u << 20))
			return E_INVALID;
		add32(&s->tmp, (uint32_t)nl);
		for (size_t j = 0; j < nl; j++) {
			char c = h[i].name[j];
			buf_addch(&s->tmp, (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
		}
		add32(&s->tmp, (uint32_t)vl);
		buf_add(&s->tmp, h[i].value, vl);
	}
	if (s->tmp.len > (size_t)8 << 20)
		return E_INVALID;
	if (!s->zout_ready) {
		size_t dl;
		const unsigned char *d = spdy_dictionary(&dl);
		memset(&s->zout, 0, sizeof(s->zout));
		/* A small window keeps a session's compressor at ~16 KiB; it still covers the dictionary. */
		if (deflateInit2(&s->zout, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 11, 4, Z_DEFAULT_STRATEGY) != Z_OK)
			return E_INTERNAL;
		s->zout_ready = true;
		if (deflateSetDictionary(&s->zout, d, (uInt)dl) != Z_OK)
			return E_INTERNAL;
	}
	s->zout.next_in = (Bytef *)s->tmp.ptr;
	s->zout.avail_in = (uInt)s->tmp.len;
	for (;;) {
		buf_grow(out, 4096);
		s->zout.next_out = (Bytef *)out->ptr + out->len;
		s->zout.avail_out = (uInt)(out->alloc - out->len - 1);
		size_t before = s->zout.avail_out;
		int zr = deflate(&s->zout, Z_SYNC_FLUSH);
		out->len += before - s->zout.avail_out;
		out->ptr[out->len] = '\0';
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return E_INTERNAL;
		if (s->zout.avail_out != 0 && s->zout.avail_in == 0)
			break;
	}
	return 0;
}

/* Inflates the block [p, p+len) into s->hdr (capped) and decodes it into s->hv. The number of
 * headers in *ret_n. 0, E_TOO_LARGE or E_BAD_REQUEST. */
static int decode_headers(struct spdy_session *s, const unsigned char *p, size_t len, size_t *ret_n)
{
	size_t cap = s->lim.max_header_block;
	buf_reset(&s->hdr);
	*ret_n = 0;
	if (len == 0)
		return 0;
	if (!s->zin_ready) {
		memset(&s->zin, 0, sizeof(s->zin));
		if (inflateInit(&s->zin) != Z_OK)
			return E_INTERNAL;
		s->zin_ready = true;
	}
	s->zin.next_in = (Bytef *)p;
	s->zin.avail_in = (uInt)len;
	for (;;) {
		if (s->hdr.len > cap)
			return E_TOO_LARGE;
		buf_grow(&s->hdr, 4096);
		size_t room = s->hdr.alloc - s->hdr.len - 1;
		if (room > cap + 1 - s->hdr.len)
			room = cap + 1 - s->hdr.len;
		s->zin.next_out = (Bytef *)s->hdr.ptr + s->hdr.len;
		s->zin.avail_out = (uInt)room;
		int zr = inflate(&s->zin, Z_SYNC_FLUSH);
		if (zr == Z_NEED_DICT) {
			size_t dl;
			const unsigned char *d = spdy_dictionary(&dl);
			if (inflateSetDictionary(&s->zin, d, (uInt)dl) != Z_OK)
				return E_BAD_REQUEST;
			continue;
		}
		s->hdr.len += room - s->zin.avail_out;
		s->hdr.ptr[s->hdr.len] = '\0';
		if (zr == Z_BUF_ERROR && s->zin.avail_in == 0)
			break;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return E_BAD_REQUEST; /* includes Z_STREAM_END: the stream must go on */
		if (s->zin.avail_in == 0 && s->zin.avail_out != 0)
			break;
	}
	if (s->hdr.len > cap)
		return E_TOO_LARGE;

	/* Decode: count, then (u32 len, name, u32 len, value) pairs. The strings are copied after
	 * the raw block inside hdr, each NUL-terminated; pointers are fixed up at the end. */
	size_t raw = s->hdr.len;
	if (raw < 4)
		return E_BAD_REQUEST;
	uint32_t count = get32((unsigned char *)s->hdr.ptr);
	if (count > s->lim.max_headers)
		return E_TOO_LARGE;
	if (count > s->hv_alloc) {
		s->hv_alloc = count;
		s->hv = xrealloc(s->hv, s->hv_alloc * sizeof(*s->hv));
	}
	size_t off = 4;
	size_t offs[2 * 128 + 2];
	size_t *o = count <= 128 ? offs : xmalloc(2 * count * sizeof(*o));
	int ret = 0;
	buf_grow(&s->hdr, raw + 2 * count); /* strings + NULs fit in raw + 2 per header */
	for (uint32_t i = 0; i < count; i++) {
		for (int k = 0; k < 2; k++) {
			if (raw - off < 4) {
				ret = E_BAD_REQUEST;
				goto out;
			}
			uint32_t l = get32((unsigned char *)s->hdr.ptr + off);
			off += 4;
			if (l > raw - off || (k == 0 && l == 0)) {
				ret = E_BAD_REQUEST;
				goto out;
			}
			o[2 * i + k] = s->hdr.len;
			s->hv[i].value_len = l; /* for the name, overwritten by the value's below */
			buf_add(&s->hdr, s->hdr.ptr + off, l);
			buf_addch(&s->hdr, '\0');
			if (k == 0)
				for (size_t j = o[2 * i]; j < s->hdr.len - 1; j++)
					if (s->hdr.ptr[j] >= 'A' && s->hdr.ptr[j] <= 'Z')
						s->hdr.ptr[j] = (char)(s->hdr.ptr[j] - 'A' + 'a');
			off += l;
		}
	}
	if (off != raw) {
		ret = E_BAD_REQUEST;
		goto out;
	}
	for (uint32_t i = 0; i < count; i++) {
		s->hv[i].name = s->hdr.ptr + o[2 * i];
		s->hv[i].value = s->hdr.ptr + o[2 * i + 1];
	}
	*ret_n = count;
out:
	if (o != offs)
		free(o);
	return ret;
}

/* ---- receiving ---- */

static void credit(struct spdy_session *s, uint32_t id, size_t n)
{
	uint64_t half = SPDY_INITIAL_WINDOW / 2;
	s->session_recv_pending += n;
	if (s->session_recv_pending >= half) {
		queue_u32_pair(s, SPDY_WINDOW_UPDATE, 0, (uint32_t)(s->session_recv_pending & 0x7fffffff));
		s->session_recv_pending = 0;
	}
	struct stream *st = find(s, id);
	if (!st || st->remote_fin)
		return;
	st->recv_pending += n;
	if (st->recv_pending >= half) {
		queue_u32_pair(s, SPDY_WINDOW_UPDATE, id, (uint32_t)(st->recv_pending & 0x7fffffff));
		st->recv_pending = 0;
	}
}

/* The peer finished its side of id: on_fin, and on_stream_closed + forget if ours was done too. */
static void remote_finished(struct spdy_session *s, uint32_t id)
{
	struct stream *st = find(s, id);
	if (!st)
		return;
	st->remote_fin = true;
	if (s->cb.on_fin)
		s->cb.on_fin(s->ud, id);
	st = find(s, id);
	if (st && st->local_fin) {
		if (s->cb.on_stream_closed)
			s->cb.on_stream_closed(s->ud, id);
		remove_stream(s, id);
	}
}

static int on_data_frame(struct spdy_session *s, uint32_t id, uint8_t flags, const unsigned char *p, size_t len)
{
	struct stream *st = find(s, id);
	if (!st || st->remote_fin) {
		/* data for a stream we do not know (or that was reset) or after its FIN: a stream error */
		if (id != 0)
			queue_rst(s, id, st ? SPDY_RST_STREAM_ALREADY_CLOSED : SPDY_RST_INVALID_STREAM);
		s->session_recv_pending += len; /* still counts against the session window */
		return 0;
	}
	if (len && s->cb.on_data)
		s->cb.on_data(s->ud, id, (const char *)p, len);
	if (len && !(s->flags & SPDY_MANUAL_WINDOW))
		credit(s, id, len);
	if (flags & SPDY_FLAG_FIN)
		remote_finished(s, id);
	return 0;
}

static int on_syn_stream(struct spdy_session *s, uint8_t flags, const unsigned char *p, size_t len)
{
	if (len < 10)
		return E_BAD_REQUEST;
	uint32_t id = get32(p) & 0x7fffffff;
	uint32_t assoc = get32(p + 4) & 0x7fffffff;
	uint8_t prio = p[8] >> 5;
	size_t n;
	/* Inflate even a stream we refuse: the peer's compressor already moved on. */
	int r = decode_headers(s, p + 10, len - 10, &n);
	if (r)
		return r;
	if (id == 0 || !peer_id(s, id) || id <= s->last_peer_id)
		return E_BAD_REQUEST;
	s->last_peer_id = id;
	if (s->goaway_sent || s->nstreams >= s->lim.max_streams || !s->cb.on_syn_stream) {
		queue_rst(s, id, SPDY_RST_REFUSED_STREAM);
		return 0;
	}
	bool fin = flags & SPDY_FLAG_FIN;
	struct stream *st = add_stream(s, id, false); /* remote_fin is set by remote_finished below */
	if (flags & SPDY_FLAG_UNIDIRECTIONAL) {
		st->local_fin = true;
		st->replied = true;
	}
	int status = s->cb.on_syn_stream(s->ud, id, assoc, prio, s->hv, n, fin);
	if (status > 0) {
		if (find(s, id)) {
			queue_rst(s, id, (uint32_t)status);
			remove_stream(s, id);
		}
		return 0;
	}
	if (fin)
		remote_finished(s, id);
	return 0;
}

static int on_reply_or_headers(struct spdy_session *s, enum spdy_frame_type type, uint8_t flags,
			       const unsigned char *p, size_t len)
{
	if (len < 4)
		return E_BAD_REQUEST;
	uint32_t id = get32(p) & 0x7fffffff;
	size_t n;
	int r = decode_headers(s, p + 4, len - 4, &n);
	if (r)
		return r;
	struct stream *st = find(s, id);
	if (!st || st->remote_fin) {
		queue_rst(s, id, st ? SPDY_RST_STREAM_ALREADY_CLOSED : SPDY_RST_INVALID_STREAM);
		return 0;
	}
	if (type == SPDY_SYN_REPLY) {
		if (!st->ours || st->replied) {
			queue_rst(s, id, SPDY_RST_STREAM_IN_USE);
			remove_stream(s, id);
			return 0;
		}
		st->replied = true;
		if (s->cb.on_syn_reply)
			s->cb.on_syn_reply(s->ud, id, s->hv, n, flags & SPDY_FLAG_FIN);
	} else if (s->cb.on_headers) {
		s->cb.on_headers(s->ud, id, s->hv, n, flags & SPDY_FLAG_FIN);
	}
	if (flags & SPDY_FLAG_FIN)
		remote_finished(s, id);
	return 0;
}

static int on_control(struct spdy_session *s, unsigned type, uint8_t flags, const unsigned char *p, size_t len)
{
	switch (type) {
	case SPDY_SYN_STREAM:
		return on_syn_stream(s, flags, p, len);
	case SPDY_SYN_REPLY:
	case SPDY_HEADERS:
		return on_reply_or_headers(s, type, flags, p, len);
	case SPDY_RST_STREAM: {
		if (len != 8)
			return E_BAD_REQUEST;
		uint32_t id = get32(p) & 0x7fffffff, status = get32(p + 4);
		if (!find(s, id))
			return 0;
		if (s->cb.on_rst)
			s->cb.on_rst(s->ud, id, status);
		if (find(s, id)) {
			if (s->cb.on_stream_closed)
				s->cb.on_stream_closed(s->ud, id);
			remove_stream(s, id);
		}
		return 0;
	}
	case SPDY_SETTINGS: {
		if (len < 4)
			return E_BAD_REQUEST;
		uint32_t count = get32(p);
		if (count > (len - 4) / 8 || len != 4 + (size_t)count * 8)
			return E_BAD_REQUEST;
		for (uint32_t i = 0; i < count; i++) {
			const unsigned char *e = p + 4 + 8 * i;
			uint8_t eflags = e[0];
			uint32_t sid = get32(e) & 0xffffff, v = get32(e + 4);
			if (sid == SPDY_SETTINGS_INITIAL_WINDOW_SIZE) {
				if (v > 0x7fffffff)
					return E_BAD_REQUEST;
				int64_t d = (int64_t)v - s->peer_initial_window;
				for (size_t j = 0; j < s->nstreams; j++)
					s->streams[j].send_window += d;
				s->peer_initial_window = v;
			}
			if (s->cb.on_settings)
				s->cb.on_settings(s->ud, sid, v, eflags);
		}
		return 0;
	}
	case SPDY_PING: {
		if (len != 4)
			return E_BAD_REQUEST;
		uint32_t pid = get32(p);
		bool ours = (pid & 1) == (s->role == SPDY_CLIENT ? 1u : 0u);
		if (ours) {
			if (s->cb.on_ping)
				s->cb.on_ping(s->ud, pid);
		} else {
			ctl_head(&s->out, SPDY_PING, 0, 4);
			add32(&s->out, pid);
		}
		return 0;
	}
	case SPDY_GOAWAY: {
		if (len != 8)
			return E_BAD_REQUEST;
		s->goaway_recv = true;
		if (s->cb.on_goaway)
			s->cb.on_goaway(s->ud, get32(p) & 0x7fffffff, get32(p + 4));
		return 0;
	}
	case SPDY_WINDOW_UPDATE: {
		if (len != 8)
			return E_BAD_REQUEST;
		uint32_t id = get32(p) & 0x7fffffff, delta = get32(p + 4) & 0x7fffffff;
		if (delta == 0)
			return E_BAD_REQUEST;
		if (id == 0) {
			s->session_send_window += delta;
		} else {
			struct stream *st = find(s, id);
			if (!st)
				return 0;
			st->send_window += delta;
		}
		if (s->cb.on_window_update)
			s->cb.on_window_update(s->ud, id, delta);
		return 0;
	}
	default:
		return 0; /* unknown control frames are ignored */
	}
}

int spdy_session_feed(struct spdy_session *s, const void *data, size_t len)
{
	if (s->err)
		return s->err;
	buf_add(&s->in, data, len);
	size_t off = 0;
	int r = 0;
	while (s->in.len - off >= 8) {
		const unsigned char *h = (const unsigned char *)s->in.ptr + off;
		size_t flen = (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
		if (flen > s->lim.max_frame) {
			r = E_TOO_LARGE;
			break;
		}
		if (s->in.len - off - 8 < flen)
			break;
		const unsigned char *p = h + 8;
		uint8_t flags = h[4];
		if (h[0] & 0x80) {
			unsigned version = ((unsigned)h[0] & 0x7f) << 8 | h[1];
			if (version != SPDY_VERSION) {
				r = E_BAD_REQUEST;
				break;
			}
			r = on_control(s, (unsigned)h[2] << 8 | h[3], flags, p, flen);
		} else {
			r = on_data_frame(s, get32(h) & 0x7fffffff, flags, p, flen);
		}
		/* s->in may not move during callbacks: nothing appends to it but feed itself */
		off += 8 + flen;
		if (r)
			break;
	}
	if (r)
		return fail(s, r);
	if (off == s->in.len) {
		buf_reset(&s->in);
	} else if (off) {
		memmove(s->in.ptr, s->in.ptr + off, s->in.len - off);
		s->in.len -= off;
		s->in.ptr[s->in.len] = '\0';
	}
	return 0;
}

/* ---- sending ---- */

static int alive(const struct spdy_session *s)
{
	return s->err ? E_UNAVAILABLE : 0;
}

int spdy_open_stream(struct spdy_session *s, const struct spdy_header *h, size_t n, uint8_t priority, bool fin,
		     uint32_t *ret_id)
{
	if (s->err || s->goaway_sent || s->goaway_recv)
		return E_UNAVAILABLE;
	if (s->next_id > 0x7fffffff || s->nstreams >= s->lim.max_streams)
		return E_TOO_MANY;
	struct buf block = BUF_INIT;
	int r = encode_headers(s, h, n, &block);
	if (r)
		goto out;
	if (block.len + 10 > 0xffffff) {
		r = E_INVALID;
		goto out;
	}
	uint32_t id = s->next_id;
	s->next_id += 2;
	ctl_head(&s->out, SPDY_SYN_STREAM, fin ? SPDY_FLAG_FIN : 0, block.len + 10);
	add32(&s->out, id);
	add32(&s->out, 0);
	buf_addch(&s->out, (char)((priority & 7) << 5));
	buf_addch(&s->out, 0);
	buf_add(&s->out, block.ptr, block.len);
	struct stream *st = add_stream(s, id, true);
	st->local_fin = fin;
	*ret_id = id;
out:
	buf_release(&block);
	return r;
}

/* Our side of st is finished: forget the stream if the peer's is too (no callback: see header). */
static void local_finished(struct spdy_session *s, struct stream *st)
{
	st->local_fin = true;
	if (st->remote_fin)
		remove_stream(s, st->id);
}

int spdy_reply(struct spdy_session *s, uint32_t id, const struct spdy_header *h, size_t n, bool fin)
{
	int r = alive(s);
	if (r)
		return r;
	struct stream *st = find(s, id);
	if (!st)
		return E_NOT_FOUND;
	if (st->ours || st->replied)
		return E_INVALID;
	struct buf block = BUF_INIT;
	r = encode_headers(s, h, n, &block);
	if (r)
		goto out;
	if (block.len + 4 > 0xffffff) {
		r = E_INVALID;
		goto out;
	}
	ctl_head(&s->out, SPDY_SYN_REPLY, fin ? SPDY_FLAG_FIN : 0, block.len + 4);
	add32(&s->out, id);
	buf_add(&s->out, block.ptr, block.len);
	st->replied = true;
	if (fin)
		local_finished(s, st);
out:
	buf_release(&block);
	return r;
}

int spdy_send_data(struct spdy_session *s, uint32_t id, const void *data, size_t len, bool fin)
{
	int r = alive(s);
	if (r)
		return r;
	struct stream *st = find(s, id);
	if (!st)
		return E_NOT_FOUND;
	if (st->local_fin)
		return E_CONFLICT;
	if (!st->ours && !st->replied)
		return E_INVALID;
	const char *p = data;
	do {
		size_t chunk = len > SPDY_MAX_DATA_FRAME ? SPDY_MAX_DATA_FRAME : len;
		bool last = chunk == len;
		unsigned char fh[8];
		put32(fh, id & 0x7fffffff);
		fh[4] = last && fin ? SPDY_FLAG_FIN : 0;
		fh[5] = (unsigned char)(chunk >> 16);
		fh[6] = (unsigned char)(chunk >> 8);
		fh[7] = (unsigned char)chunk;
		if (chunk || fh[4])
			buf_add(&s->out, fh, 8);
		buf_add(&s->out, p, chunk);
		p += chunk;
		len -= chunk;
		st->send_window -= (int64_t)chunk;
		s->session_send_window -= (int64_t)chunk;
	} while (len);
	if (fin)
		local_finished(s, st);
	return 0;
}

int spdy_close_stream(struct spdy_session *s, uint32_t id)
{
	return spdy_send_data(s, id, NULL, 0, true);
}

int spdy_reset_stream(struct spdy_session *s, uint32_t id, enum spdy_rst_status status)
{
	int r = alive(s);
	if (r)
		return r;
	if (!find(s, id))
		return E_NOT_FOUND;
	queue_rst(s, id, status);
	remove_stream(s, id);
	return 0;
}

int spdy_ping(struct spdy_session *s, uint32_t *ret_id)
{
	int r = alive(s);
	if (r)
		return r;
	uint32_t id = s->next_ping;
	s->next_ping += 2;
	ctl_head(&s->out, SPDY_PING, 0, 4);
	add32(&s->out, id);
	if (ret_id)
		*ret_id = id;
	return 0;
}

int spdy_goaway(struct spdy_session *s, enum spdy_goaway_status status)
{
	int r = alive(s);
	if (r)
		return r;
	queue_u32_pair(s, SPDY_GOAWAY, s->last_peer_id, status);
	s->goaway_sent = true;
	return 0;
}

int spdy_send_setting(struct spdy_session *s, uint32_t setting_id, uint32_t value)
{
	int r = alive(s);
	if (r)
		return r;
	ctl_head(&s->out, SPDY_SETTINGS, 0, 12);
	add32(&s->out, 1);
	add32(&s->out, setting_id & 0xffffff);
	add32(&s->out, value);
	return 0;
}

int spdy_stream_consumed(struct spdy_session *s, uint32_t id, size_t n)
{
	if (!(s->flags & SPDY_MANUAL_WINDOW) || s->err)
		return 0;
	bool known = find(s, id) != NULL;
	credit(s, id, n);
	return known ? 0 : E_NOT_FOUND;
}

int64_t spdy_stream_send_window(const struct spdy_session *s, uint32_t id)
{
	const struct stream *st = find(s, id);
	return st ? st->send_window : INT64_MIN;
}
