#include "cmocka_all.h"
#include "mail/diff.h"
#include "mail/reply.h"

#include <stdio.h>
#include <string.h>

static void test_nak_words(void **state)
{
	static const char *const yes[] = {
		"NACK.",
		"NACK",
		"Nack.",
		"  nak  ",
		"NAK for this",
		"NACK for v4.",
		"Still a NACK",
		"I'll self-NACK this series.",
		"NAK, this breaks the ABI.",
		"I NAK this patch",
		"Strong NAK from me.",
		"This gets a NAK from me.",
		"For now, NAK.",
		"update: NAK, v3 breaks the build as well.",
		"nit: NAK for this one, the rest is fine.",
		"Nacked.",
		"NAK: the lock is taken twice",
		"Sorry, but I have to NAK this.",
		"So no, NACK.",
		"Not pretty, and NAK for the locking.",
		"I'm NAK'ing this one.",
		/* said, even with a condition for taking it back */
		"NAK until the ABI question is settled.",
		"NAK: this breaks the build if CONFIG_FOO=n",
		"I will NAK this.",
		"And still NAKed.",
		"NAK unless you keep the old ioctl",
		/* emphatic */
		"NAAAK",
		"NAAAACK this.",
		"NAK!!!",
		"*NAK*",
		"_NACK_",
		"_NACK_ for the locking",
		"Hard NACK",
		"Strong NAK",
		/* the verb, said by the author */
		"NACKing this",
		"Nak'd",
		"I'm nacking it",
		"I am NACKing this.",
		"We are NAKing the series.",
		"I hereby NAK this.",
		"This is a clear NAK.",
		/* a conclusion after a negated reason */
		"This doesn't even build so NAK.",
		"It would break userspace, hence NACK.",
		"The lock isn't taken here so I have to NAK this.",
		"No. NAK.",
		NULL,
	};
	static const char *const no[] = {
		"snack",
		"ACK",
		"Acked-by: A <a@example.org>",
		"Nacked-by: A <a@example.org>",
		"flags |= I2C_M_IGNORE_NAK;",
		"waiting for an ACK/NAK from the maintainers",
		"If the client NAKs the address we return -ENXIO.",
		"This is not a NAK, just a question.",
		"Why the NAK?",
		"NAK handling is broken in this driver",
		"the device sends a NAK to the host",
		"I don't want to NAK it, but please fix the test.",
		"on NAK we retry",
		"There is no NAK from the target here.",
		"the controller is told to NAK further bytes",
		"Naked eye",
		"",
		/* code and logs: the protocol's word */
		"\tNAK;",
		"/* NAK from the target: stop */",
		"#define NAK 0x15",
		"if (ret == I2C_NAK)",
		"\tif (status == NAK) return -EIO;",
		"case NAK: /* NAK for the address */",
		"[   12.345678] i2c i2c-1: NAK from device addr 0x50",
		"[ 3.2] i2c_designware: NAK for address 0x30",
		"Dec  6 21:00:01 host kernel: i2c i2c-1: NAK from 0x50",
		"2024-01-02T10:00:00.123Z NAK from the target",
		/* a commit's title, pasted */
		"i2c: xiic: NAK the last byte of a read",
		"usb: dwc3: gadget: NAK OUT transfers until the FIFO drains",
		NULL,
	};
	/*
	 * Negated, withdrawn, hypothetical, conditional, someone else's,
	 * reported or quoted: the word is there, the verdict is not.
	 */
	static const char *const not_said[] = {
		"I withdraw my NAK.",
		"I withdraw my NAK (for what it's worth), but can we find "
		"something to",
		"I was going to NAK this, but v2 fixed it.",
		"I would NAK it if it broke the ABI, but it does not.",
		"Consider my NAK withdrawn.",
		"My earlier NAK no longer stands.",
		"Dropping my NAK, v3 addresses it.",
		"Please disregard my earlier NACK.",
		"NAK retracted.",
		"You may want to NAK this.",
		"Greg will NAK this.",
		"If this breaks userspace, NAK.",
		"I almost NAKed this, but the test convinced me.",
		"I NACKed v1 of this for the locking, v2 is fine.",
		"He said \"NAK\" to the old version.",
		"I'd have NAKed this had it touched the ABI.",
		"I thought about a NAK, but the fix is needed.",
		"They will probably NAK it on the list.",
		/* negated or hedged */
		"I won't NAK this.",
		"I'm not going to NACK it.",
		"I'd be inclined to NAK this.",
		"I'm inclined to NAK this.",
		"This may well get NAKed.",
		"This will probably get NAKed.",
		"I don't think this deserves a NAK.",
		"I do not intend to NAK this series.",
		"Not a NAK, just a question.",
		/* inside a quotation: a commit's title, someone's words */
		"Please add Fixes: 0123456789ab (\"i2c: NAK the last byte\")",
		"The commit \xe2\x80\x9ci2c: NAK the last byte\xe2\x80\x9d "
		"broke it.",
		"He wrote \"this is a NAK from me\" on v1.",
		"I'm not so sure about a NAK.",
		"I do not think so NAK is right here.",
		NULL,
	};
	const char *const *p;

	for (p = not_said; *p; p++) {
		print_message("not said: %s\n", *p);
		assert_false(reply_line_is_nak(*p, strlen(*p)));
	}
	for (p = yes; *p; p++) {
		print_message("yes: %s\n", *p);
		assert_true(reply_line_is_nak(*p, strlen(*p)));
	}
	for (p = no; *p; p++) {
		print_message("no: %s\n", *p);
		assert_false(reply_line_is_nak(*p, strlen(*p)));
	}
}

/* The kinds of lines, one letter each: o own, b blank, q quote,
 * a attribution, h header block, g original, t trim, s sig, f footer,
 * d disclaimer. */
static void kinds_are(const char *text, const char *want)
{
	static const char letters[] = "obqahgtsfd";
	struct reply *r;
	char got[256];
	size_t i;

	assert_int_equal(reply_parse(&r, text, strlen(text), NULL, NULL), 0);
	for (i = 0; i < r->nr && i + 1 < sizeof(got); i++)
		got[i] = letters[r->lines[i].kind];
	got[i] = '\0';
	print_message("%s\n", text);
	assert_string_equal(got, want);
	reply_free(r);
}

static void test_kinds(void **state)
{
	kinds_are("On Mon, Jan 1, 2024 at 10:00 AM Jane <j@example.org> "
		  "wrote:\n> quoted\n\nown\n",
		  "aqbo");
	/* wrapped attribution (Gmail) */
	kinds_are("On Fri, May 9, 2025 at 3:53 AM Luca <\n"
		  "l@example.org> wrote:\n> q\nown\n",
		  "aaqo");
	/* mutt's "* Name <address> [date]:" */
	kinds_are("* Jane <j@example.org> [2024-01-01 10:00]:\n\n> q\n", "abq");
	/* Gnus, alot, German, Chinese */
	kinds_are("Xin Long <x@example.org> writes:\n\n> q\n", "abq");
	kinds_are("Quoting Dmitry (2022-03-23 03:35:44)\n> q\n", "aq");
	kinds_are("Am 23.11.20 um 12:18 schrieb Lee Jones:\n> q\n", "aq");
	kinds_are("Jane \xe4\xba\x8e"
		  "2026\xe5\xb9\xb4 16:26\xe5\x86\x99\xe9"
		  "\x81\x93\xef\xbc\x9a\n> q\n",
		  "aq");
	/* quote styles */
	kinds_are(">no space\n > leading\n> > nested\n>>tight\n&gt; entity\n",
		  "qqqqq");
	/* trim markers, signature */
	kinds_are("> q\n...snip...\n--- snipped ---\n<snip/>\nsnip\n", "qtttt");
	kinds_are("> q\n...\n[...]\n<snip>\n[skipped the patch]\nown\n-- \n"
		  "sig\n> after sig\n",
		  "qttttossq");
	/* "--" without the space: a signature above a few short lines,
	 * also with an original quoted under them; a rule above a quoted
	 * diff, text between quotes, a trailer or long text */
	kinds_are("own\n--\nJane Doe\nAcme\n", "osss");
	kinds_are("own\n--\nJane\n\n> q\n", "osssq");
	kinds_are("sum\n--\n> @@ -1,2 +1,2 @@\n> -a\n> +b\nwhy?\n", "otqqqo");
	kinds_are("sum\n--\n> -a\nwhy?\n", "otqo");
	kinds_are("sum\n--\nAcked-by: J <j@example.org>\n", "oto");
	kinds_are("sum\n--\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", "otooooooooo");
	/* "--" without the space before a short signature */
	kinds_are("own\n--\nJane\n", "oss");
	/* top-posting above an Outlook header block: the rest is the
	 * original even without '>' */
	kinds_are("Looks fine.\n\n-----Original Message-----\n"
		  "From: A <a@example.org>\nSent: Monday\nTo: list\n"
		  "Subject: [PATCH] x\n\nReviewed-by: Q <q@example.org>\n",
		  "obhhhhhbg");
	/* French Outlook header block, bottom-posted under quotes */
	kinds_are("De : A <a@example.org>\nEnvoy\xc3\xa9 : lundi\n"
		  "\xc3\x80 : list\nObjet : [PATCH] x\n\n> quoted\nown\n",
		  "hhhhbqo");
	/* an unquoted original opening the message ends with its patch */
	kinds_are("From: A <a@example.org>\nSent: Monday\nSubject: x\n\n"
		  "Commit text\n---\n a.c | 1 +\n 1 file changed, 1 "
		  "insertion(+)\n\nTested-by: T <t@example.org>\n",
		  "hhhbggggbo");
	/* a mailing list footer and a disclaimer */
	kinds_are("own\n_______________________________________________\n"
		  "Foo mailing list\nfoo@example.org\n",
		  "offf");
	kinds_are("own\n\nThis e-mail is confidential and intended for the "
		  "recipient only.\n",
		  "obd");
}

/*
 * Attributions, Outlook separators and header blocks, and mobile
 * signatures as real mailers in several languages write them, and lines
 * that only look like one.  "\xc2\xa0" is a no-break space (French puts
 * one before a colon), "\xe2\x80\xaf" a narrow one.
 */
static const struct {
	const char *text, *want;
} forms[] = {
	/* attributions on one line, then the quote and an own line */
	{ "Am Di., 3. Dez. 2026 um 10:00 Uhr schrieb Jane <j@example.org>:\n"
	  "> q\nown\n",
	  "aqo" },
	{ "Am 03.12.26 um 10:00 schrieb Jane:\n> q\n", "aq" },
	{ "Le mar. 3 d\xc3\xa9"
	  "c. 2026 \xc3\xa0 10:00, Jane <j@example.org> a \xc3\xa9"
	  "crit :\n> q\n",
	  "aq" },
	{ "Le mar. 3 d\xc3\xa9"
	  "c. 2026 \xc3\xa0 10:00, Jane <j@example.org> a \xc3\xa9"
	  "crit\xc2\xa0:\n> q\n",
	  "aq" },
	{ "Le 03/12/2026 \xc3\xa0 10:00, Jane a \xc3\xa9"
	  "crit\xe2\x80\xaf:\n> q\n",
	  "aq" },
	{ "El mar, 3 dic 2026 a las 10:00, Jane (<j@example.org>) "
	  "escribi\xc3\xb3:\n> q\n",
	  "aq" },
	{ "Il giorno mar 3 dic 2026 alle ore 10:00 Jane <j@example.org> ha "
	  "scritto:\n> q\n",
	  "aq" },
	{ "Em ter., 3 de dez. de 2026 \xc3\xa0s 10:00, Jane <j@example.org> "
	  "escreveu:\n> q\n",
	  "aq" },
	{ "Op di 3 dec. 2026 om 10:00 schreef Jane <j@example.org>:\n> q\n",
	  "aq" },
	{ "Op 03-12-2026 om 10:00 schreef Jane:\n> q\n", "aq" },
	{ "03.12.2026 10:00, Jane \xd0\xbf\xd0\xb8\xd1\x88\xd0\xb5\xd1\x82:\n"
	  "> q\n",
	  "aq" },
	{ "Dne 3. 12. 2026 v 10:00 Jane <j@example.org> napsal(a):\n> q\n",
	  "aq" },
	/* Gmail in Russian: no verb, an address and a colon */
	{ "\xd0\xb2\xd1\x82, 3 \xd0\xb4\xd0\xb5\xd0\xba. 2026 \xd0\xb3. \xd0\xb2 "
	  "10:00, Jane <j@example.org>:\n> q\n",
	  "aq" },
	{ "\xe5\x9c\xa8 2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5 10:00\xef\xbc\x8cJane <j@example.org> "
	  "\xe5\x86\x99\xe9\x81\x93\xef\xbc\x9a\n> q\n",
	  "aq" },
	{ "2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5(\xe7\x81\xab) 10:00 Jane <j@example.org> "
	  "\xe3\x81\xae\xe3\x83\xa1\xe3\x83\x83\xe3\x82\xbb\xe3\x83\xbc"
	  "\xe3\x82\xb8:\n> q\n",
	  "aq" },
	/* wrapped over two lines */
	{ "Am Di., 3. Dez. 2026 um 10:00 Uhr schrieb Jane <\n"
	  "j@example.org>:\n> q\nown\n",
	  "aaqo" },
	{ "Am Di., 3. Dez. 2026 um 10:00 Uhr schrieb Jane\n"
	  "<j@example.org>:\n> q\n",
	  "aaq" },
	{ "Le mar. 3 d\xc3\xa9"
	  "c. 2026 \xc3\xa0 10:00, Jane <j@example.org> a\n\xc3\xa9"
	  "crit :\n> q\n",
	  "aaq" },
	{ "Le mar. 3 d\xc3\xa9"
	  "c. 2026 \xc3\xa0 10:00, Jane <\nj@example.org> a \xc3\xa9"
	  "crit :\n> q\n",
	  "aaq" },
	{ "El mar, 3 dic 2026 a las 10:00, Jane (<\nj@example.org>) "
	  "escribi\xc3\xb3:\n> q\n",
	  "aaq" },
	{ "Il giorno mar 3 dic 2026 alle ore 10:00 Jane <j@example.org>\n"
	  "ha scritto:\n> q\n",
	  "aaq" },
	{ "Em ter., 3 de dez. de 2026 \xc3\xa0s 10:00, Jane <\n"
	  "j@example.org> escreveu:\n> q\n",
	  "aaq" },
	{ "Op di 3 dec. 2026 om 10:00 schreef Jane <\nj@example.org>:\n> q\n",
	  "aaq" },
	{ "03.12.2026 10:00, Jane <j@example.org>\n"
	  "\xd0\xbf\xd0\xb8\xd1\x88\xd0\xb5\xd1\x82:\n> q\n",
	  "aaq" },
	{ "\xd0\xb2\xd1\x82, 3 \xd0\xb4\xd0\xb5\xd0\xba. 2026 \xd0\xb3. \xd0\xb2 "
	  "10:00, Jane <\nj@example.org>:\n> q\n",
	  "aaq" },
	{ "\xe5\x9c\xa8 2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5 10:00\xef\xbc\x8cJane <\nj@example.org> "
	  "\xe5\x86\x99\xe9\x81\x93\xef\xbc\x9a\n> q\n",
	  "aaq" },
	{ "2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5(\xe7\x81\xab) 10:00 Jane <\nj@example.org> "
	  "\xe3\x81\xae\xe3\x83\xa1\xe3\x83\x83\xe3\x82\xbb\xe3\x83\xbc"
	  "\xe3\x82\xb8:\n> q\n",
	  "aaq" },
	{ "On Tue, Dec 3, 2026 at 10:00 AM Jane <\nj@example.org> wrote:\n"
	  "> q\nown\n",
	  "aaqo" },
	{ "On Tue, Dec 3, 2026 at 10:00 AM Jane\n<j@example.org> wrote:\n"
	  "> q\n",
	  "aaq" },
	{ "On Tue, Dec 3, 2026 at 10:00 AM Jane <j@example.org>\nwrote:\n"
	  "> q\n",
	  "aaq" },
	/* only look like one: a trailer or a NAK never opens a wrapped
	 * attribution, a sentence is none, "overwrote" is no "wrote" */
	{ "Acked-by: Rev <r@example.org>\nOn Tue, Dec 3, 2026 at 10:00 AM "
	  "Jane <j@example.org> wrote:\n> q\n",
	  "oaq" },
	{ "NAK, this breaks v3,\nJane <j@example.org> wrote:\n> q\n", "oaq" },
	{ "Le patch est bon.\nJane a \xc3\xa9"
	  "crit :\n> q\n",
	  "oaq" },
	{ "Tested on 6.8 and it works.\nJane wrote:\n> q\n", "oaq" },
	{ "That commit overwrote:\n> q\n", "oq" },
	/* top-posting above an attribution and an original without '>':
	 * the rest is the original, but not under "As Jane said:" */
	{ "Looks good.\n\nIl giorno mar 3 dic 2026 alle ore 10:00 Jane "
	  "<j@example.org> ha scritto:\n\nCommit text\n"
	  "Acked-by: Q <q@example.org>\n",
	  "obabgg" },
	{ "Looks good.\n\nOp di 3 dec. 2026 om 10:00 schreef Jane <\n"
	  "j@example.org>:\n\nCommit text\nNAK.\n",
	  "obaabgg" },
	{ "Looks good.\n\n03.12.2026 10:00, Jane "
	  "\xd0\xbf\xd0\xb8\xd1\x88\xd0\xb5\xd1\x82:\nCommit text\n",
	  "obag" },
	{ "Looks good.\n\n\xd0\xb2\xd1\x82, 3 \xd0\xb4\xd0\xb5\xd0\xba. 2026 "
	  "\xd0\xb3. \xd0\xb2 10:00, Jane <j@example.org>:\n\nCommit text\n",
	  "obabg" },
	{ "Looks good.\n\n2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5(\xe7\x81\xab) 10:00 Jane <\nj@example.org>:\n\n"
	  "Commit text\n",
	  "obaabg" },
	{ "Looks good.\n\nAs Jane <j@example.org> said:\n\nthe lock is wrong\n",
	  "obabo" },
	/* Outlook: separators and header blocks, translated */
	{ "Looks fine.\n\n-----Urspr\xc3\xbcngliche Nachricht-----\n"
	  "Von: A <a@example.org>\nGesendet: Dienstag\nAn: list\n"
	  "Betreff: [PATCH] x\n\nAcked-by: Q <q@example.org>\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n-----Message d'origine-----\n"
	  "De\xc2\xa0: A <a@example.org>\nEnvoy\xc3\xa9\xc2\xa0: mardi\n"
	  "\xc3\x80\xc2\xa0: list\nObjet\xc2\xa0: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n-----Message d\xe2\x80\x99origine-----\n"
	  "De : A <a@example.org>\nEnvoy\xc3\xa9 : mardi\n\xc3\x80 : list\n"
	  "Objet : [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n-----Mensaje original-----\nDe: A <a@example.org>\n"
	  "Enviado: martes\nPara: list\nAsunto: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "From: A <a@example.org>\nSent: Tuesday\nTo: list\n"
	  "Subject: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "Von: A <a@example.org>\nGesendet: Dienstag\nAn: list\n"
	  "Betreff: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "De : A <a@example.org>\nEnvoy\xc3\xa9 : mardi\n\xc3\x80 : list\n"
	  "Objet : [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "De: A <a@example.org>\nEnviado: martes\nPara: list\n"
	  "Asunto: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "De: A <a@example.org>\nEnviada em: ter\xc3\xa7"
	  "a-feira\nPara: list\nAssunto: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "Van: A <a@example.org>\nVerzonden: dinsdag\nAan: list\n"
	  "Onderwerp: [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	/* the field names in bold, as text */
	{ "Looks fine.\n\n________________________________\n"
	  "*From:* A <a@example.org>\n*Sent:* Tuesday\n*To:* list\n"
	  "*Subject:* [PATCH] x\n\nNAK.\n",
	  "obhhhhhbg" },
	{ "Looks fine.\n\n________________________________\n"
	  "**From:** A <a@example.org>\n**Sent:** Tuesday\n\nNAK.\n",
	  "obhhhbg" },
	/* mobile signatures: that line alone */
	{ "Acked-by: R <r@example.org>\n\nSent from my iPhone\n\n> q\n",
	  "obsbq" },
	{ "own\nEnvoy\xc3\xa9 de mon iPhone\n", "os" },
	{ "own\nVon meinem iPhone gesendet\n", "os" },
	{ "own\nGet Outlook for Android\n", "os" },
	{ "own\nGet Outlook for iOS<https://aka.ms/o0ukef>\n", "os" },
	{ "own\nEnviado desde mi iPhone\n", "os" },
	{ "own\nSent from my Samsung Galaxy smartphone.\n", "os" },
	{ "own\n\xe5\x8f\x91\xe8\x87\xaa\xe6\x88\x91\xe7\x9a\x84iPhone\n",
	  "os" },
	{ "own\niPhone\xe3\x81\x8b\xe3\x82\x89\xe9\x80\x81\xe4\xbf\xa1\n",
	  "os" },
	{ "Sent from my iPhone\n\n-----Original Message-----\n"
	  "From: A <a@example.org>\nSent: Monday\nSubject: x\n\nNAK.\n",
	  "sbhhhhbg" },
	/* ... but not a sentence that opens the same way */
	{ "Sent from my phone. NAK.\n", "o" },
	{ "Von meinem Standpunkt aus ist das falsch\n", "o" },
	{ "Sent from the wrong address, sorry\n", "o" },
};

static void test_forms(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		kinds_are(forms[i].text, forms[i].want);
}

/*
 * The original found by its structure, in languages and scripts no word
 * list names: a separator of any words (or a bare rule) with a header
 * block under it, or a header block alone at a paragraph's start, whose
 * values say who sent it or when.  And the own text that only looks like
 * one: a single "Field: value" line, trailers, times without a year, a
 * pasted "git log", a kernel test robot's report, an oops.
 */
static const struct {
	const char *text, *want;
} structures[] = {
	/* Czech Outlook */
	{ "D\xc3\xadky.\n\n-----P\xc5\xafvodn\xc3\xad zpr\xc3\xa1va-----\n"
	  "Od: A <a@example.org>\nOdesl\xc3\xa1no: 7. prosince 2026 10:15\n"
	  "Komu: list\nP\xc5\x99"
	  "edm\xc4\x9bt: [PATCH] x\n\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhhbg" },
	/* Thunderbird in Polish: runs of three around the words */
	{ "Dzi\xc4\x99ki.\n\n--- Tre\xc5\x9b\xc4\x87 przekazanej "
	  "wiadomo\xc5\x9b"
	  "ci ---\nTemat: \t[PATCH] x\n"
	  "Data: \tTue, 1 Dec 2026 10:00:00 +0100\n"
	  "Nadawca: \tA <a@example.org>\nAdresat: \tlist\n\n\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhhbbg" },
	/* Japanese: a full-width colon, a date without a sender's address */
	{ "\xe4\xba\x86\xe8\xa7\xa3\xe3\x80\x82\n\n"
	  "-------- \xe8\xbb\xa2\xe9\x80\x81\xe3\x83\xa1\xe3\x83\x83\xe3\x82"
	  "\xbb\xe3\x83\xbc\xe3\x82\xb8 --------\n"
	  "\xe4\xbb\xb6\xe5\x90\x8d\xef\xbc\x9a[PATCH] x\n"
	  "\xe6\x97\xa5\xe4\xbb\x98\xef\xbc\x9a"
	  "2026/12/07 10:15\n"
	  "\xe5\xb7\xae\xe5\x87\xba\xe4\xba\xba\xef\xbc\x9a"
	  "A\n\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhbg" },
	/* Welsh, no separator: a block that opens a paragraph */
	{ "Diolch.\n\nOddi wrth: A <a@example.org>\n"
	  "Anfonwyd: 7 Rhagfyr 2026 10:15\nAt: list\nPwnc: [PATCH] x\n\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhbg" },
	/* Korean in bold under Outlook's rule; a folded To: line */
	{ "OK.\n\n________________________________\n"
	  "*\xeb\xb3\xb4\xeb\x82\xb8 \xec\x82\xac\xeb\x9e\x8c:* A\n"
	  "*\xeb\xb3\xb4\xeb\x82\xb8 \xeb\x82\xa0\xec\xa7\x9c:* "
	  "2026\xeb\x85\x84 12\xec\x9b\x94 7\xec\x9d\xbc 10:15\n"
	  "*\xeb\xb0\x9b\xeb\x8a\x94 \xec\x82\xac\xeb\x9e\x8c:* list;\n"
	  "other@example.org\n\nAcked-by: M <m@example.org>\n",
	  "obhhhhhbg" },
	/* Finnish writes the time with a dot */
	{ "Kiitos.\n\n=====\nL\xc3\xa4hett\xc3\xa4j\xc3\xa4: A\n"
	  "L\xc3\xa4hetetty: maanantai 7. joulukuuta 2026 10.15\n"
	  "Aihe: x\n\nAcked-by: M <m@example.org>\n",
	  "obhhhhbg" },
	/* Arabic Outlook, its date in Arabic-Indic digits; Thai, the
	 * Buddhist year; Korean, full-width digits */
	{ "\xd8\xb4\xd9\x83\xd8\xb1\xd8\xa7.\n"
	  "\n"
	  "-----\xd8\xa7\xd9\x84\xd8\xb1\xd8\xb3\xd8\xa7\xd9\x84\xd8\xa9 \xd8"
	  "\xa7\xd9\x84\xd8\xa3\xd8\xb5\xd9\x84\xd9\x8a\xd8\xa9-----\n"
	  "\xd9\x85\xd9\x86: A\n"
	  "\xd8\xaa\xd9\x85 \xd8\xa7\xd9\x84\xd8\xa5\xd8\xb1\xd8\xb3\xd8\xa7"
	  "\xd9\x84: \xd9\xa7 \xd8\xaf\xd9\x8a\xd8\xb3\xd9\x85\xd8\xa8\xd8"
	  "\xb1 \xd9\xa2\xd9\xa0\xd9\xa2\xd9\xa6 \xd9\xa1\xd9\xa0:\xd9\xa1"
	  "\xd9\xa5\n"
	  "\xd8\xa5\xd9\x84\xd9\x89: list\n"
	  "\xd8\xa7\xd9\x84\xd9\x85\xd9\x88\xd8\xb6\xd9\x88\xd8\xb9: x\n"
	  "\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhhbg" },
	{ "\xe0\xb8\x82\xe0\xb8\xad\xe0\xb8\x9a\xe0\xb8\x84\xe0\xb8\xb8\xe0"
	  "\xb8\x93\n"
	  "\n"
	  "________________________________\n"
	  "\xe0\xb8\x88\xe0\xb8\xb2\xe0\xb8\x81: A\n"
	  "\xe0\xb8\xaa\xe0\xb9\x88\xe0\xb8\x87: 7 \xe0\xb8\x98\xe0\xb8\xb1"
	  "\xe0\xb8\x99\xe0\xb8\xa7\xe0\xb8\xb2\xe0\xb8\x84\xe0\xb8\xa1 2569 "
	  "10:15\n"
	  "\xe0\xb8\x96\xe0\xb8\xb6\xe0\xb8\x87: list\n"
	  "\xe0\xb9\x80\xe0\xb8\xa3\xe0\xb8\xb7\xe0\xb9\x88\xe0\xb8\xad\xe0"
	  "\xb8\x87: x\n"
	  "\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhhbg" },
	{ "OK.\n"
	  "\n"
	  "\xeb\xb3\xb4\xeb\x82\xb8 \xec\x82\xac\xeb\x9e\x8c: A\n"
	  "\xeb\xb3\xb4\xeb\x82\xb8 \xeb\x82\xa0\xec\xa7\x9c: \xef\xbc\x92"
	  "\xef\xbc\x90\xef\xbc\x92\xef\xbc\x96\xeb\x85\x84 \xef\xbc\x91\xef"
	  "\xbc\x92\xec\x9b\x94 \xef\xbc\x97\xec\x9d\xbc \xef\xbc\x91\xef\xbc"
	  "\x90\xef\xbc\x9a\xef\xbc\x91\xef\xbc\x95\n"
	  "\xeb\xb0\x9b\xeb\x8a\x94 \xec\x82\xac\xeb\x9e\x8c: list\n"
	  "\xec\xa0\x9c\xeb\xaa\xa9: x\n"
	  "\n"
	  "Acked-by: M <m@example.org>\n",
	  "obhhhhbg" },
	/* Gmail's forward in Spanish, Apple Mail's in French: a block
	 * under the separator's words or under a line of its own */
	{ "Mira esto.\n\n---------- Mensaje reenviado ---------\n"
	  "De: A <a@example.org>\n"
	  "Date: lun, 7 dic 2026 a las 10:15\nSubject: [PATCH] x\n"
	  "To: <list@example.org>\n\n\nAcked-by: M <m@example.org>\n",
	  "obhhhhhbbg" },
	{ "Regarde.\n\nD\xc3\xa9"
	  "but du message r\xc3\xa9"
	  "exp\xc3\xa9"
	  "di\xc3\xa9 :\n\n"
	  "De: A <a@example.org>\nObjet: [PATCH] x\n"
	  "Date: 7 d\xc3\xa9"
	  "cembre 2026 \xc3\xa0 10:15:00 UTC+1\n"
	  "\xc3\x80: list@example.org\n\nAcked-by: M <m@example.org>\n",
	  "obobhhhhbg" },
	/* an Outlook block whose long Cc: the mailer folded */
	{ "OK.\n\n________________________________\nFrom: A\n"
	  "Sent: 7 December 2026 10:15\nTo: list\nCc: B <b@example.org>;\n"
	  "C <c@example.org>; D <d@example.org>;\nE <e@example.org>;\n"
	  "F <f@example.org>\nSubject: x\n\nAcked-by: M <m@example.org>\n",
	  "obhhhhhhhhhbg" },
	/* own text: one field line, trailers, a time without a year */
	{ "Note: see commit abc\n\nReviewed-by: R <r@example.org>\n", "obo" },
	{ "Fixes: 1234abcd (\"foo: bar\")\n"
	  "Link: https://lore.kernel.org/r/x@example.org\n"
	  "Cc: stable@vger.kernel.org\nReviewed-by: R <r@example.org>\n",
	  "oooo" },
	{ "Reviewed by: R <r@example.org>\nTested-by: T <t@example.org>\n",
	  "oo" },
	{ "Before: 10:30 ms\nAfter: 09:12 ms\n\nAcked-by: R <r@example.org>\n",
	  "oobo" },
	{ "Tested on: 2026-12-07\nBoard: rpi4\n\n"
	  "Acked-by: R <r@example.org>\n",
	  "oobo" },
	{ "=====\nResult: 2026-12-07 10:15 pass\n\n"
	  "Acked-by: R <r@example.org>\n",
	  "oobo" },
	/* a tester's results: two fields opening the message, a list */
	{ "Build: 2026-12-07 10:15 OK\nBoot: OK\n\n"
	  "Tested-by: T <t@example.org>\n",
	  "oobo" },
	{ "## Build\n* Kernel: 6.8.0-rc1\n* Git: 1234abcd\n"
	  "* Built: 2026-12-07 10:15\n\nTested-by: T <t@example.org>\n",
	  "oooobo" },
	/* two fields opening a paragraph of prose */
	{ "Status: tested on 7 December 2026 at 10:15\nPlan: merge it\n"
	  "once the series is in\nand the docs are\nupdated too\n\n"
	  "Acked-by: R <r@example.org>\n",
	  "ooooobo" },
	/* two fields in the middle of a paragraph, a pasted "git log" */
	{ "I ran it on\nKernel: 6.8, 2026-12-07 10:15\n"
	  "Lab: <lab@example.org>\n\nAcked-by: R <r@example.org>\n",
	  "ooobo" },
	{ "Introduced by\n\ncommit 1234abcd\nAuthor: A <a@example.org>\n"
	  "Date:   Mon Dec 7 10:15:00 2026 +0100\n\n    foo: bar\n\n"
	  "Reviewed-by: R <r@example.org>\n",
	  "obooobobo" },
	/* a kernel test robot's report: the address is inside a link */
	{ "url:    https://github.com/0day-ci/linux/commits/x\n"
	  "base:   https://git.kernel.org/x dev-test\n"
	  "config: x86_64-randconfig (https://download.01.org/0day-ci/"
	  "archive/20211231/202112310650.TDDinvVT-lkp@intel.com/config)\n"
	  "compiler: gcc-9\n\nReported-by: kernel test robot <lkp@intel.com>\n",
	  "oooobo" },
	{ "FYI, the error/warning still remains.\n\n"
	  "tree:   https://git.kernel.org/pub/scm/linux/kernel/git/next/"
	  "linux-next.git master\nhead:   1234abcd\n"
	  "commit: 5678abcd [12/34] foo: bar\n"
	  "author: Jane Doe <jane@example.org>\n"
	  "date:   7 December 2026 10:15\n\n"
	  "Reported-by: kernel test robot <lkp@intel.com>\n",
	  "obooooobo" },
	/* git log pasted from its "Author:" line */
	{ "Introduced by\n\nAuthor: A <a@example.org>\n"
	  "Date:   Mon Dec 7 10:15:00 2026 +0100\n\n    foo: bar\n\n"
	  "Reviewed-by: R <r@example.org>\n",
	  "oboobobo" },
	/* an oops under its "cut here" line */
	{ "------------[ cut here ]------------\n"
	  "WARNING: CPU: 0 PID: 1 at foo.c:12 bar+0x1/0x2\n"
	  "Modules linked in: foo\n"
	  "CPU: 0 PID: 1 Comm: swapper Not tainted 6.8.0 #1\n"
	  "Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), "
	  "BIOS 1.16.3 04/01/2014\n\nAcked-by: R <r@example.org>\n",
	  "ooooobo" },
};

static void test_original_by_structure(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(structures) / sizeof(structures[0]); i++)
		kinds_are(structures[i].text, structures[i].want);
}

static void test_blocks_and_own_text(void **state)
{
	static const char text[] = "Hi Jane,\n"
				   "\n"
				   "> +\tint x;\n"
				   "Why int?\n"
				   "\n"
				   "> +\treturn x;\n"
				   "\n"
				   "Thanks,\n"
				   "Petr\n";
	struct reply *r;
	struct buf b = BUF_INIT(4096);

	assert_int_equal(reply_parse(&r, text, strlen(text), NULL, NULL), 0);
	assert_int_equal(r->nr_blocks, 3);
	assert_false(r->blocks[0].substance); /* greeting */
	assert_true(r->blocks[1].substance);
	assert_false(r->blocks[2].substance); /* sign-off and name */
	assert_int_equal(reply_own_text(&b, r), 0);
	assert_string_equal(b.data,
			    "Hi Jane,\n\n\nWhy int?\n\n\n\nThanks,\nPetr\n");
	buf_reset(&b);
	assert_int_equal(reply_block_text(&b, r, 1, 1), 0);
	assert_string_equal(b.data, "Why int?");
	buf_release(&b);
	reply_free(r);
}

/* The substance of each block of text, one letter each: y or n. */
static void substance_is(const char *text, const char *sender,
			 const char *email, const char *want)
{
	struct reply *r;
	char got[64];
	size_t i;

	assert_int_equal(reply_parse(&r, text, strlen(text), sender, email), 0);
	for (i = 0; i < r->nr_blocks && i + 1 < sizeof(got); i++)
		got[i] = r->blocks[i].substance ? 'y' : 'n';
	got[i] = '\0';
	print_message("%s---\n%s\n", text, got);
	assert_string_equal(got, want);
	reply_free(r);
}

/*
 * A signature is known by its form, never by its length: short inline
 * comments ("Wrong comparison operator", "Same here") are the author's
 * words wherever they stand; a name counts as a signature under a
 * closing, right before "-- ", pushed to the right at the end, or when
 * it is the sender's name, first name or the name in the address.
 */
static void test_short_comments_and_signatures(void **state)
{
	static const char *const comments[] = {
		"Wrong comparison operator",
		"Overflow not handled",
		"Same here",
		"Memory leak",
		"Missing newline",
		"Unused variable",
		"Needs a comment",
		"Not needed",
		"Use kfree",
		"Double space",
		"Same as above",
		"Jane, same here",
	};
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(comments) / sizeof(comments[0]); i++) {
		/* after a quote, as the last line, as the only line */
		snprintf(text, sizeof(text),
			 "> +\tif (a < b)\n%s\n\n> +\treturn x;\n",
			 comments[i]);
		substance_is(text, "Jane Doe", "jane@example.org", "y");
		snprintf(text, sizeof(text), "> +\tif (a < b)\n%s\n",
			 comments[i]);
		substance_is(text, "Jane Doe", "jane@example.org", "y");
		substance_is(text, NULL, NULL, "y");
	}
	/* names: under a closing, with a title under it, the sender's */
	substance_is("> x\nWrong comparison operator\n\nThanks,\nJane\n", NULL,
		     NULL, "y");
	substance_is("> x\nWrong\n\n> y\nThanks,\nJane Doe\nAcme Widgets\n",
		     NULL, NULL, "yn");
	substance_is("Acked-by: Chris Li <chrisl@kernel.example>\nChris\n",
		     "Chris Li", "chrisl@kernel.example", "n");
	substance_is("Acked-by: Steven Rostedt <rostedt@goodmis.example>\n\n"
		     "- Steve\n",
		     "Steven Rostedt", "rostedt@goodmis.example", "n");
	substance_is("Reviewed-by: Hawking Zhang <h@amd.example>\n\n"
		     "Hawking Zhang\n",
		     "Zhang, Hawking", "Hawking.Zhang@amd.example", "n");
	substance_is("Reviewed-by: Jane Doe <jane@example.org>\n\nJane\n",
		     "Jane Doe via ltp", "ltp@lists.example", "n");
	substance_is("Tested-by: Lu Fei <lufei@uniontech.example>\n\nLu Fei\n",
		     "\xe8\xb7\xaf\xe6\x96\x90", "lufei@uniontech.example",
		     "n");
	substance_is("> x\nReviewed-by: Jan Kara <jack@suse.example>\n\n"
		     "\t\t\t\t\t\t\t\tHonza\n\n> rest of the patch\n",
		     "Jan Kara", "jack@suse.example", "n");
	/* right before "-- " only a name: "Nice cleanup" is a comment */
	substance_is("Acked-by: Jane Doe <jane@example.org>\n\nNice cleanup\n"
		     "-- \nJane Doe\n",
		     NULL, NULL, "y");
	substance_is(
		"Looks fine.\n\nHonza\n-- \nJan Kara <jack@suse.example>\n",
		"Jan Kara", "jack@suse.example", "y");
	/* the block text keeps the comment and drops the signature */
	{
		static const char t[] = "> +\tif (a < b)\n"
					"Wrong comparison operator\n"
					"\n"
					"Thanks,\n"
					"Jane\n";
		struct reply *r;
		struct buf b = BUF_INIT(4096);

		assert_int_equal(reply_parse(&r, t, strlen(t), "Jane Doe",
					     "jane@example.org"),
				 0);
		assert_int_equal(reply_block_text(&b, r, 0, 1), 0);
		assert_string_equal(b.data, "Wrong comparison operator");
		buf_release(&b);
		reply_free(r);
	}
}

/* The text of block bi as reply_block_text() gives it to the forge. */
static void block_text_is(const char *text, const char *sender,
			  const char *email, size_t bi, const char *want)
{
	struct reply *r;
	struct buf b = BUF_INIT(4096);

	assert_int_equal(reply_parse(&r, text, strlen(text), sender, email), 0);
	print_message("%s---\n", text);
	assert_true(bi < r->nr_blocks);
	assert_true(r->blocks[bi].substance);
	assert_int_equal(reply_block_text(&b, r, bi, 1), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
	reply_free(r);
}

/*
 * No reviewer's word is lost to a greeting or a sign-off: a greeting is
 * the greeting word and whom it greets, nothing more ("Hi Alice, NAK."
 * says something); a sign-off word closes the text only when a name or
 * nothing follows it ("Thanks, Phil"), never when it starts a sentence
 * that goes on ("Thanks, looks wrong", "Cheers to ...", "Regards the
 * second hunk, ..."); a line under a closing is a signature only when
 * it is written like a name or is the sender's.
 */
static void test_greetings_and_signoffs_keep_words(void **state)
{
	static const char *const said[] = {
		"Hi Alice, NAK.",
		"Hello all, the locking in foo() is wrong",
		"Dear maintainers, this breaks the boot",
		"Hi Alice wrong lock",
		"Hi, NAK",
		"Thanks, looks wrong",
		"Thanks, but no",
		"Thanks for the fix, but the locking in foo() is wrong",
		"Cheers to the reviewers, wrong lock",
		"Regards the second hunk, it leaks",
		"Best, not like this",
		"Thanks, NAK",
		"\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe8\xbf\x99\xe4\xb8\xaa"
		"\xe8\xa1\xa5\xe4\xb8\x81\xe6\x9c\x89\xe9\x97\xae\xe9\xa2\x98",
	};
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
		/* the only line, under a quote, above a quote */
		snprintf(text, sizeof(text), "%s\n", said[i]);
		block_text_is(text, "Rita Reviewer", "rita@example.org", 0,
			      said[i]);
		snprintf(text, sizeof(text), "> +\tif (a < b)\n%s\n", said[i]);
		block_text_is(text, "Rita Reviewer", "rita@example.org", 0,
			      said[i]);
		snprintf(text, sizeof(text), "%s\n\n> +\tif (a < b)\n",
			 said[i]);
		block_text_is(text, NULL, NULL, 0, said[i]);
	}
	/* a sentence under a closing is no signature */
	block_text_is("> x\nWrong\n\nThanks,\nlooks racy too\n", NULL, NULL, 0,
		      "Wrong\n\nThanks,\nlooks racy too");
	block_text_is("> x\nThanks,\nbut the lock is wrong\n", NULL, NULL, 0,
		      "Thanks,\nbut the lock is wrong");
	/* a greeting above words, a sign-off and a name under them */
	block_text_is("Hi Alice,\n\nThe lock is wrong.\n\nThanks,\nRita\n",
		      NULL, NULL, 0, "The lock is wrong.");
	block_text_is("Hello all,\nThe lock is wrong.\nCheers, Rita\n", NULL,
		      NULL, 0, "The lock is wrong.");
	block_text_is("> x\nWrong.\n\nThanks,\ntglx\n", "Thomas Gleixner",
		      "tglx@linutronix.example", 0, "Wrong.");
	block_text_is("> x\nWrong.\n\nThanks, tglx\n", "Thomas Gleixner",
		      "tglx@linutronix.example", 0, "Wrong.");
	block_text_is("> x\nWrong.\n\nCheers,\nsteve\n", NULL, NULL, 0,
		      "Wrong.");
	block_text_is("> x\nWrong.\n\nThanks,\nnak\n", NULL, NULL, 0,
		      "Wrong.\n\nThanks,\nnak");
	/* greetings and sign-offs alone are still no comment */
	substance_is("Hi Alice,\n\n> x\nThanks,\nRita\n", NULL, NULL, "nn");
	substance_is("Dear maintainers,\n\n> x\nCheers, Jane Doe\n", NULL, NULL,
		     "nn");
	substance_is("Hello all!\n\n> x\nBest regards,\nJane Doe\n"
		     "Acme Widgets\n",
		     NULL, NULL, "nn");
	substance_is("Hi Rita and Bob,\n\n> x\nThanks!\n", NULL, NULL, "nn");
	substance_is("Hi xiang:\n\n> x\nThanks!\n", NULL, NULL, "nn");
	block_text_is("Hi, typo.\n\n> x\n", NULL, NULL, 0, "Hi, typo.");
}

/* The commit titles of a shortlog ("git request-pull", a cover letter)
 * are not the sender's words: a protocol's NAK there is no verdict. */
static void test_shortlog_nak(void **state)
{
	static const char pull[] =
		"Hi Wolfram,\n"
		"\n"
		"The following changes since commit 0123456789ab:\n"
		"\n"
		"  Linux 6.9-rc1 (2026-03-24 14:00:00 -0700)\n"
		"\n"
		"are available in the Git repository at:\n"
		"\n"
		"  git://git.example.org/i2c.git tags/i2c-fixes\n"
		"\n"
		"----------------------------------------------------------------\n"
		"Jane Doe (2):\n"
		"      i2c: xiic: NAK the last byte of a read\n"
		"      i2c: xiic: on NAK, stop the transfer\n"
		"\n"
		"Jim Smith (1):\n"
		"      i2c: designware: NACK for a 10-bit address\n"
		"\n"
		" drivers/i2c/busses/i2c-xiic.c | 12 ++++++++----\n";
	struct reply *r;

	assert_int_equal(reply_parse(&r, pull, strlen(pull), NULL, NULL), 0);
	assert_false(r->nak);
	reply_free(r);
	/* the same words said by the sender are one */
	assert_int_equal(reply_parse(&r,
				     "NAK the last byte, this breaks "
				     "reads.\n",
				     39, NULL, NULL),
			 0);
	assert_true(r->nak);
	reply_free(r);
}

static const char patch[] = "Subject line\n"
			    "---\n"
			    " a.c | 3 ++-\n"
			    "diff --git a/a.c b/a.c\n"
			    "index 1..2 100644\n"
			    "--- a/a.c\n"
			    "+++ b/a.c\n"
			    "@@ -10,5 +10,6 @@ int f(void)\n"
			    " \tint a;\n"
			    "-\tint b;\n"
			    "+\tlong b;\n"
			    "+\tlong c;\n"
			    " \n"
			    " \treturn a;\n"
			    " }\n"
			    "@@ -40,3 +41,3 @@ int g(void)\n"
			    " {\n"
			    "-\treturn 0;\n"
			    "+\treturn 1;\n"
			    " }\n";

static void test_anchor(void **state)
{
	/* a trimmed, re-indented quote of the second hunk, a wrapped line,
	 * and a comment after the whole patch */
	static const char text[] = "On Mon, A wrote:\n"
				   "> -\tint b;\n"
				   "Old side.\n"
				   "> +    long c;\n"
				   "> [...]\n"
				   ">  }\n"
				   "Context line.\n"
				   "...\n"
				   ">-\treturn 0;\n"
				   ">+\treturn 1;\n"
				   ">  }\n"
				   "After the end.\n";
	struct diff *d;
	struct reply *r;
	const struct diff_line *l;

	assert_int_equal(diff_parse(&d, patch, strlen(patch)), 0);
	assert_int_equal(d->nr_lines, 11);
	assert_int_equal(reply_parse(&r, text, strlen(text), NULL, NULL), 0);
	assert_int_equal(reply_anchor(r, d, NULL), 0);
	assert_int_equal(r->nr_blocks, 3);
	l = &d->lines[r->blocks[0].diff];
	assert_int_equal(l->kind, '-');
	assert_int_equal(l->old_no, 11);
	assert_false(r->blocks[0].general);
	/* "}" of the first hunk, reached through the trim */
	l = &d->lines[r->blocks[1].diff];
	assert_int_equal(l->kind, ' ');
	assert_int_equal(l->old_no, 14);
	assert_int_equal(l->new_no, 15);
	/* after the last line of the patch: general */
	assert_true(r->blocks[2].general);
	reply_free(r);
	diff_free(d);
}

static void test_anchor_without_patch(void **state)
{
	static const char text[] = "> @@ -40,3 +41,3 @@ int g(void)\n"
				   ">  {\n"
				   "> -\treturn 0;\n"
				   "Why?\n"
				   "> +\treturn 1;\n";
	struct diff *pseudo;
	struct reply *r;
	const struct diff_line *l;

	assert_int_equal(reply_parse(&r, text, strlen(text), NULL, NULL), 0);
	assert_int_equal(reply_anchor(r, NULL, &pseudo), 0);
	assert_non_null(pseudo);
	assert_int_equal(r->nr_blocks, 1);
	l = &pseudo->lines[r->blocks[0].diff];
	assert_int_equal(l->old_no, 41);
	assert_int_equal(l->new_no, 0);
	reply_free(r);
	diff_free(pseudo);
}

static void test_diff_parse(void **state)
{
	static const char two[] = "diff --git a/old.c b/new.c\n"
				  "similarity index 90%\n"
				  "rename from old.c\n"
				  "rename to new.c\n"
				  "--- a/old.c\n"
				  "+++ b/new.c\n"
				  "@@ -1 +1 @@\n"
				  "-a\n"
				  "+b\n"
				  "diff --git a/n.c b/n.c\n"
				  "new file mode 100644\n"
				  "--- /dev/null\n"
				  "+++ b/n.c\n"
				  "@@ -0,0 +1,2 @@\n"
				  "+x\n"
				  "+y\n"
				  "@@ broken @@\n";
	struct diff *d;

	assert_int_equal(diff_parse(&d, two, strlen(two)), 0);
	assert_int_equal(d->nr_files, 2);
	assert_string_equal(d->files[0].old_path, "old.c");
	assert_string_equal(d->files[0].new_path, "new.c");
	assert_null(d->files[1].old_path);
	assert_string_equal(d->files[1].new_path, "n.c");
	assert_int_equal(d->nr_lines, 4);
	assert_int_equal(d->lines[3].new_no, 2);
	assert_int_equal(d->lines[3].file, 1);
	assert_true(d->hunks[1].complete);
	diff_free(d);
}

/*
 * A NAK in context: the sentence a line belongs to, code and logs the
 * author pasted or wrote, and the two forms review.c tells apart - a
 * paragraph that is the word alone, and any other mention.
 */
static void test_nak_in_context(void **state)
{
	static const struct {
		const char *text;
		int nak, alone, mention;
	} cases[] = {
		/* the paragraph is the word alone */
		{ "NAK.\n", 1, 1, 1 },
		{ "Hi,\n\nNack!\n\nThanks,\nRita\n", 1, 1, 1 },
		{ "> the old code\nNACK\n> more\n", 1, 1, 1 },
		{ "nak\n-- \nRita\n", 1, 1, 1 },
		{ "  NAK!!!  \n", 1, 1, 1 },
		/* emphasis marked up: read, but a mention */
		{ "*NAK*\n", 1, 0, 1 },
		{ "_NACK_\n", 1, 0, 1 },
		/* said, but not alone: acted on only as a trailer */
		{ "Hi,\nNAK.\n", 1, 0, 1 },
		{ "NAK.\nThe lock is taken twice.\n", 1, 0, 1 },
		{ "NAK for the locking.\n", 1, 0, 1 },
		{ "NAAAK\n", 1, 0, 1 },
		{ "Strong NAK.\n", 1, 0, 1 },
		{ "Thanks for the patch\nNAK for the locking.\n", 1, 0, 1 },
		/* a question, an invisible character: not the word alone */
		{ "NAK?\n", 0, 0, 1 },
		{ "NAK.\xe2\x80\x8b\n", 1, 0, 1 },
		{ "\"NAK\"\n", 0, 0, 1 },
		/* mentioned only */
		{ "This is not a NAK.\n", 0, 0, 1 },
		{ "The device NAKs the address.\n", 0, 0, 1 },
		{ "flags |= I2C_M_IGNORE_NAK;\n", 0, 0, 0 },
		{ "Looks fine to me.\n", 0, 0, 0 },
		/* a sentence wrapped before the word */
		{ "Looks fine, and for that reason I do not\nNAK this.\n", 0, 0,
		  1 },
		{ "I wouldn't go as far as to\nNAK this.\n", 0, 0, 1 },
		{ "The locking is wrong and the ABI changes, so I have to\n"
		  "NAK this.\n",
		  1, 0, 1 },
		/* code the author wrote, under an example's introduction */
		{ "Something like:\n\nNAK for the last byte\n", 0, 0, 1 },
		{ "Something like:\n\tif (ret == NAK)\n\t\treturn -EIO;\n", 0,
		  0, 1 },
		{ "How about this instead:\n\n    NAK the last byte, then "
		  "stop.\n",
		  0, 0, 1 },
		/* indented: code */
		{ "\tNAK the last byte\n", 0, 0, 1 },
		{ "Please do\n\n    NAK for the address phase\n", 0, 0, 1 },
		/* a colon that introduces no paste, the word alone is none */
		{ "Regarding the log level change:\n\nNAK.\n", 1, 1, 1 },
		{ "Comments below:\n\nNAK for the locking.\n", 1, 0, 1 },
		{ "Something like:\n\nNACK\n", 1, 1, 1 },
		{ "\tNACK.\n", 1, 1, 1 },
		/* a pasted commit */
		{ "Please squash this into the commit\ni2c: xiic: NAK the last "
		  "byte of a read\nwhich broke it.\n",
		  0, 0, 1 },
		/* a pasted log */
		{ "dmesg shows:\nNAK from the device on every read\n", 0, 0,
		  1 },
		{ "With the patch I get:\n\n[   12.345678] i2c i2c-1: "
		  "sendbytes:\n  NAK bailout.\n",
		  0, 0, 1 },
		{ "[   12.345678] i2c i2c-1: xfer failed\n"
		  "[   12.345702] NAK from device addr 0x50\n",
		  0, 0, 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reply *r;

		print_message("%s---\n", cases[i].text);
		assert_int_equal(
			reply_parse(&r, cases[i].text, strlen(cases[i].text),
				    "Rita Reviewer", "rita@example.org"),
			0);
		assert_int_equal(r->nak, cases[i].nak);
		assert_int_equal(r->nak_alone, cases[i].alone);
		assert_int_equal(r->nak_mention, cases[i].mention);
		reply_free(r);
	}
}

/* A flowed paragraph is one long line: a NAK after a hundred and more
 * words is still read, in its own sentence's context. */
static void test_nak_long_line(void **state)
{
	char line[4096];
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < 150; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "word%zu%s ",
				      i, i % 10 == 9 ? "." : "");
	snprintf(line + n, sizeof(line) - n, "NAK for the locking.");
	assert_true(reply_line_is_nak(line, strlen(line)));
	snprintf(line + n, sizeof(line) - n, "I will not NAK it.");
	assert_false(reply_line_is_nak(line, strlen(line)));
	snprintf(line + n, sizeof(line) - n, "NAK handling is broken.");
	assert_false(reply_line_is_nak(line, strlen(line)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nak_words),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_original_by_structure),
		cmocka_unit_test(test_blocks_and_own_text),
		cmocka_unit_test(test_anchor),
		cmocka_unit_test(test_anchor_without_patch),
		cmocka_unit_test(test_diff_parse),
		cmocka_unit_test(test_short_comments_and_signatures),
		cmocka_unit_test(test_shortlog_nak),
		cmocka_unit_test(test_nak_in_context),
		cmocka_unit_test(test_nak_long_line),
		cmocka_unit_test(test_greetings_and_signoffs_keep_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
