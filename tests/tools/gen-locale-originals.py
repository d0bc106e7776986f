#!/usr/bin/python3
"""Replies that carry a quoted original in another language, for the
test that the original is found by its structure (`parse_locale_originals`,
docs/SECURITY.md, "The original is found by structure").

For each locale below it writes six complete RFC 5322 replies from the
maintainer to a patch (In-Reply-To the patch, UTF-8, quoted-printable or
base64):

  LOCALE-outlook-attack.eml  Outlook's top-post: a short comment in the
      language, then the localised "-----Original Message-----" and the
      From/Sent/To/Subject block, then the patch's text, pasted without
      ">", whose trailers include `Acked-by:` and `Reviewed-by:` naming
      the maintainer (an attacker's patch that names them);
  LOCALE-outlook-rule-attack.eml  the same as Outlook sends an HTML
      reply as text: a rule of underscores instead of the separator's
      words;
  LOCALE-tb-attack.eml  Thunderbird's inline forward: the comment, the
      localised "-------- Forwarded Message --------" and the
      Subject/Date/From/To block, then the same original;
  LOCALE-*-honest.eml  each of them with the maintainer's own
      `Acked-by:` under the comment, above the separator.

The words come from the clients' own translations where they could be
read, cited beside each locale:

  Thunderbird: the l10n repository (github.com/thunderbird/thunderbird-l10n,
      read at 5d7cde6f5d): LOCALE/mail/chrome/messenger/messengercompose/
      composeMsgs.properties `mailnews.forward_header_originalmessage`
      (the separator), LOCALE/mail/chrome/messenger/mime.properties
      1000 (Subject), 1007 (Date), 1009 (From), 1012 (To), the labels
      its plain-text inline forward writes, each followed by ": " and a
      tab.  Every Thunderbird string here was read there and checked
      against it ("tb" rows, the directory beside each).  Its forward
      prefix, "Fwd:", is not translated (mail.forward_subject_prefix).
  Outlook: Microsoft publishes no table of its localised reply headers.
      A word marked "seen" was found in real list mail or in other reply
      parsers' data for that language (the locale's comment says where);
      a word marked "unverified" is from memory of the localised client
      and could not be checked against Microsoft's strings.

As a program:

    gen-locale-originals.py --out DIR          write the mails to DIR
    gen-locale-originals.py --check PATCHBRIDGE
        write them to a temporary directory, run `PATCHBRIDGE parse` on
        all of them (JSON Lines) and fail (exit 1) when an attack mail
        reports any trailer or a NAK, or an honest mail does not report
        exactly the maintainer's Acked-by.
"""

import base64
import json
import os
import quopri
import subprocess
import sys
import tempfile

MAINT = ("Maja Maintainer", "maja@kernel.example.org")
AUTHOR = ("Ada Author", "ada@example.com")
LIST = "foo-devel@lists.example.org"
PATCH_ID = "<20261201100000.4242-2-ada@example.com>"
TITLE = "foo: wait for the device with a deadline"

# Each locale:
#   ol_sep, ol_from, ol_sent, ol_to, ol_subj: Outlook's separator words
#     and labels; ol_re: its reply prefix; ol_date: a date as its
#     "Sent" line writes it; ol_src: where the words were seen.  The
#     Greek "ΑΠ:", Italian "R:", Hebrew and Arabic prefixes are not read
#     as a reply's by subject.c today, so those locales send the "RE:"
#     that Outlook's option "use English message headers" gives; the
#     quoted block stays localised;
#   tb: Thunderbird's separator and labels (Subject, Date, From, To),
#     from thunderbird-l10n as above;
#   text: a short comment in the language (the maintainer's own);
#   bold: Outlook's labels as "*From:*" (an HTML reply sent as text).
LOCALES = [
    dict(loc="cs", ol_sep="Původní zpráva", ol_from="Od", ol_sent="Odesláno",
         ol_to="Komu", ol_subj="Předmět", ol_re="Odp:",
         ol_date="pondělí 7. prosince 2026 10:15",
         ol_src="seen: Czech Outlook mail in other parsers' test data",
         # tb: thunderbird-l10n cs/mail/chrome/messenger/
         tb=("Přeposlaná zpráva", "Předmět", "Datum", "Od", "Komu"),
         text="Díky, vypadá to dobře, jen prosím oprav překlep v popisu."),
    dict(loc="da", ol_sep="Oprindelig meddelelse", ol_from="Fra",
         ol_sent="Sendt", ol_to="Til", ol_subj="Emne", ol_re="SV:",
         ol_date="7. december 2026 10:15",
         ol_src="seen: mail-parser-reply's Danish Outlook header",
         # tb: thunderbird-l10n da/mail/chrome/messenger/
         tb=("Videresendt meddelelse", "Emne", "Dato", "Fra", "Til"),
         text="Tak, det ser fint ud. Jeg tager den i næste runde."),
    dict(loc="de", ol_sep="Ursprüngliche Nachricht", ol_from="Von",
         ol_sent="Gesendet", ol_to="An", ol_subj="Betreff", ol_re="AW:",
         ol_date="Montag, 7. Dezember 2026 10:15",
         ol_src="seen: list mail (tests/data/parse/outlook-toppost-latin1)",
         # tb: thunderbird-l10n de/mail/chrome/messenger/
         tb=("Weitergeleitete Nachricht", "Betreff", "Datum", "Von", "An"),
         text="Danke, sieht gut aus. Bitte noch den Tippfehler beheben.",
         bold=True),
    dict(loc="el", ol_sep="Αρχικό μήνυμα", ol_from="Από",
         ol_sent="Στάλθηκε", ol_to="Προς", ol_subj="Θέμα", ol_re="RE:",
         ol_date="Δευτέρα, 7 Δεκεμβρίου 2026 10:15",
         ol_src="separator seen in a reply parser's data; labels unverified",
         # tb: thunderbird-l10n el/mail/chrome/messenger/
         tb=("Προωθημένο μήνυμα", "Θέμα", "Ημερομηνία", "Από", "Προς"),
         text="Ευχαριστώ, φαίνεται σωστό. Θα το δοκιμάσω αύριο."),
    dict(loc="es-ES", ol_sep="Mensaje original", ol_from="De",
         ol_sent="Enviado el", ol_to="Para", ol_subj="Asunto", ol_re="RE:",
         ol_date="lunes, 7 de diciembre de 2026 10:15",
         ol_src="seen: mail-parser-reply's Spanish Outlook header "
         "(\"Enviado el\" unverified)",
         # tb: thunderbird-l10n es-ES/mail/chrome/messenger/
         tb=("Mensaje reenviado", "Asunto", "Fecha", "De", "Para"),
         text="Gracias, tiene buena pinta. Lo pruebo mañana."),
    dict(loc="fi", ol_sep="Alkuperäinen viesti", ol_from="Lähettäjä",
         ol_sent="Lähetetty", ol_to="Vastaanottaja", ol_subj="Aihe",
         ol_re="VS:", ol_date="maanantai 7. joulukuuta 2026 10.15",
         ol_src="seen: Finnish Outlook mail in other parsers' test data",
         # tb: thunderbird-l10n fi/mail/chrome/messenger/
         tb=("Välitetty viesti / Fwd.Msg", "Aihe", "Päiväys", "Lähettäjä",
             "Vastaanottaja"),
         text="Kiitos, näyttää hyvältä. Testaan huomenna."),
    dict(loc="fr", ol_sep="Message d'origine", ol_from="De",
         ol_sent="Envoyé", ol_to="À", ol_subj="Objet", ol_re="RE :",
         ol_date="lundi 7 décembre 2026 10:15",
         ol_src="seen: mail-parser-reply's French Outlook header",
         # tb: thunderbird-l10n fr/mail/chrome/messenger/
         tb=("Message transféré", "Sujet", "Date", "De", "Pour"),
         text="Merci, ça me semble correct. Je teste demain.",
         sp_colon=True),  # "Sujet : ", as mime.properties has it
    dict(loc="hu", ol_sep="Eredeti üzenet", ol_from="Feladó",
         ol_sent="Küldve", ol_to="Címzett", ol_subj="Tárgy", ol_re="VS:",
         ol_date="2026. december 7., hétfő 10:15",
         ol_src="separator and Feladó/Címzett/Tárgy seen in other parsers' "
         "data; Küldve unverified",
         # tb: thunderbird-l10n hu/mail/chrome/messenger/
         tb=("Továbbított üzenet", "Tárgy", "Dátum", "Feladó", "Címzett"),
         text="Köszönöm, jónak tűnik. Holnap kipróbálom."),
    dict(loc="it", ol_sep="Messaggio originale", ol_from="Da",
         ol_sent="Inviato", ol_to="A", ol_subj="Oggetto", ol_re="RE:",
         ol_date="lunedì 7 dicembre 2026 10:15",
         ol_src="seen: mail-parser-reply's Italian Outlook header; R: "
         "on xappsoftware.com's note on Italian Outlook",
         # tb: thunderbird-l10n it/mail/chrome/messenger/
         tb=("Messaggio Inoltrato", "Oggetto", "Data", "Mittente", "A"),
         text="Grazie, mi sembra corretto. Lo provo domani.", bold=True),
    dict(loc="ko", ol_sep="원본 메시지", ol_from="보낸 사람",
         ol_sent="보낸 날짜", ol_to="받는 사람", ol_subj="제목", ol_re="RE:",
         ol_date="2026년 12월 7일 월요일 오전 10:15",
         ol_src="seen: separator in other parsers' data, labels in "
         "mail-parser-reply's Korean header",
         # tb: thunderbird-l10n ko/mail/chrome/messenger/
         tb=("전달된 메시지", "제목", "날짜", "보낸 사람", "받는 사람"),
         text="감사합니다. 괜찮아 보입니다. 내일 테스트하겠습니다."),
    dict(loc="nl", ol_sep="Oorspronkelijk bericht", ol_from="Van",
         ol_sent="Verzonden", ol_to="Aan", ol_subj="Onderwerp", ol_re="RE:",
         ol_date="maandag 7 december 2026 10:15",
         ol_src="seen: mail-parser-reply's Dutch Outlook header",
         # tb: thunderbird-l10n nl/mail/chrome/messenger/
         tb=("Doorgestuurd bericht", "Onderwerp", "Datum", "Van", "Aan"),
         text="Bedankt, ziet er goed uit. Ik test het morgen."),
    dict(loc="pl", ol_sep="Wiadomość oryginalna", ol_from="Od",
         ol_sent="Wysłano", ol_to="Do", ol_subj="Temat", ol_re="RE:",
         ol_date="poniedziałek, 7 grudnia 2026 10:15",
         ol_src="seen: mail-parser-reply's Polish Outlook header",
         # tb: thunderbird-l10n pl/mail/chrome/messenger/
         tb=("Treść przekazanej wiadomości", "Temat", "Data", "Nadawca",
             "Adresat"),
         tb_run=3,  # "--- Treść przekazanej wiadomości ---"
         text="Dzięki, wygląda dobrze. Przetestuję jutro."),
    dict(loc="pt-BR", ol_sep="Mensagem original", ol_from="De",
         ol_sent="Enviada em", ol_to="Para", ol_subj="Assunto", ol_re="RE:",
         ol_date="segunda-feira, 7 de dezembro de 2026 10:15",
         ol_src="unverified (Enviada em: seen in Portuguese Outlook mail)",
         # tb: thunderbird-l10n pt-BR/mail/chrome/messenger/
         tb=("Mensagem encaminhada", "Assunto", "Data", "De", "Para"),
         text="Obrigado, parece correto. Vou testar amanhã."),
    dict(loc="ro", ol_sep="Mesaj original", ol_from="De la",
         ol_sent="Trimis", ol_to="Către", ol_subj="Subiect", ol_re="RE:",
         ol_date="luni, 7 decembrie 2026 10:15", ol_src="unverified",
         # tb: thunderbird-l10n ro/mail/chrome/messenger/
         tb=("Mesaj redirecționat", "Subiect", "Dată", "de la", "Către"),
         text="Mulțumesc, arată bine. Îl testez mâine."),
    dict(loc="ru", ol_sep="Исходное сообщение", ol_from="От",
         ol_sent="Отправлено", ol_to="Кому", ol_subj="Тема", ol_re="RE:",
         ol_date="7 декабря 2026 г. 10:15",
         ol_src="seen: Russian Outlook mail on lists (its words were in "
         "reply.c's lists before)",
         # tb: thunderbird-l10n ru/mail/chrome/messenger/
         tb=("Перенаправленное сообщение", "Тема", "Дата", "От", "Кому"),
         text="Спасибо, выглядит хорошо. Завтра проверю."),
    dict(loc="sk", ol_sep="Pôvodná správa", ol_from="Od",
         ol_sent="Odoslané", ol_to="Komu", ol_subj="Predmet", ol_re="RE:",
         ol_date="29. septembra 2026 21:12",
         ol_src="seen: Slovak Outlook mail on linux-kernel (2005)",
         # tb: thunderbird-l10n sk/mail/chrome/messenger/
         tb=("Preposlaná správa --- Forwarded Message", "Predmet", "Dátum",
             "Od", "Pre"),
         text="Vďaka, vyzerá to dobre. Zajtra to otestujem."),
    dict(loc="sl", ol_sep="Izvirno sporočilo", ol_from="Od",
         ol_sent="Poslano", ol_to="Za", ol_subj="Zadeva", ol_re="RE:",
         ol_date="ponedeljek, 7. december 2026 10:15", ol_src="unverified",
         # tb: thunderbird-l10n sl/mail/chrome/messenger/
         tb=("Posredovano sporočilo", "Zadeva", "Datum", "Od", "Za"),
         text="Hvala, izgleda v redu. Jutri preizkusim."),
    dict(loc="sv-SE", ol_sep="Ursprungligt meddelande", ol_from="Från",
         ol_sent="Skickat", ol_to="Till", ol_subj="Ämne", ol_re="SV:",
         ol_date="den 7 december 2026 10:15",
         ol_src="seen: Swedish Outlook mail on linux-media (2009)",
         # tb: thunderbird-l10n sv-SE/mail/chrome/messenger/
         tb=("Vidarebefordrat meddelande", "Ämne", "Datum", "Från", "Till"),
         text="Tack, ser bra ut. Jag testar i morgon."),
    dict(loc="tr", ol_sep="Özgün İleti", ol_from="Kimden",
         ol_sent="Gönderildi", ol_to="Kime", ol_subj="Konu", ol_re="YNT:",
         ol_date="7 Aralık 2026 Pazartesi 10:15",
         ol_src="separator and Kimden seen in other parsers' data; the "
         "other labels unverified",
         # tb: thunderbird-l10n tr/mail/chrome/messenger/
         tb=("İletilen İleti", "Konu", "Tarih", "Kimden", "Kime"),
         text="Teşekkürler, iyi görünüyor. Yarın deneyeceğim."),
    dict(loc="uk", ol_sep="Оригінальне повідомлення", ol_from="Від",
         ol_sent="Надіслано", ol_to="Кому", ol_subj="Тема", ol_re="RE:",
         ol_date="7 грудня 2026 р. 10:15", ol_src="unverified",
         # tb: thunderbird-l10n uk/mail/chrome/messenger/
         tb=("Переслане повідомлення", "Тема", "Дата", "Від", "Кому"),
         text="Дякую, виглядає добре. Завтра перевірю."),
    dict(loc="zh-CN", ol_sep="邮件原件", ol_from="发件人", ol_sent="发送时间",
         ol_to="收件人", ol_subj="主题", ol_re="答复:",
         ol_date="2026年12月7日 10:15",
         ol_src="seen: Chinese Outlook mail on lists (its words were in "
         "reply.c's lists before)",
         # tb: thunderbird-l10n zh-CN/mail/chrome/messenger/
         tb=("转发的消息", "主题", "日期", "发件人", "收件人"),
         text="谢谢，看起来没问题。我明天测试一下。", fullwidth=True),
    dict(loc="zh-TW", ol_sep="原始郵件", ol_from="寄件者", ol_sent="寄件日期",
         ol_to="收件者", ol_subj="主旨", ol_re="回覆:",
         ol_date="2026年12月7日 上午 10:15",
         ol_src="separator, 寄件者, 收件者 seen (reply.c's lists); "
         "寄件日期 and 主旨 unverified",
         # tb: thunderbird-l10n zh-TW/mail/chrome/messenger/
         tb=("轉寄郵件", "主旨", "日期", "從", "到"),
         text="謝謝，看起來沒問題。我明天測試。"),
    dict(loc="he", ol_sep="הודעה מקורית", ol_from="מאת", ol_sent="נשלח",
         ol_to="אל", ol_subj="נושא", ol_re="RE:",
         ol_date="יום שני 07 דצמבר 2026 10:15", ol_src="unverified",
         # tb: thunderbird-l10n he/mail/chrome/messenger/
         tb=("הודעה שהועברה", "נושא", "תאריך", "מאת", "אל"),
         text="תודה, נראה טוב. אבדוק מחר."),
    dict(loc="ar", ol_sep="الرسالة الأصلية", ol_from="من",
         ol_sent="تم الإرسال", ol_to="إلى", ol_subj="الموضوع", ol_re="RE:",
         ol_date="07/12/2026 10:15", ol_src="unverified",
         # tb: thunderbird-l10n ar/mail/chrome/messenger/
         tb=("رسالة ممرّرة", "الموضوع", "التاريخ", "مِن", "إلى"),
         text="شكرا، يبدو جيدا. سأختبره غدا."),
    dict(loc="bg", ol_sep="Оригинално съобщение", ol_from="От",
         ol_sent="Изпратено", ol_to="До", ol_subj="Тема", ol_re="RE:",
         ol_date="7 декември 2026 г. 10:15", ol_src="unverified",
         # tb: thunderbird-l10n bg/mail/chrome/messenger/
         tb=("Препратено писмо", "Тема", "Дата", "От", "До"),
         text="Благодаря, изглежда добре. Ще го тествам утре."),
    dict(loc="hr", ol_sep="Izvorna poruka", ol_from="Šalje",
         ol_sent="Poslano", ol_to="Prima", ol_subj="Predmet", ol_re="RE:",
         ol_date="7. prosinca 2026. 10:15", ol_src="unverified",
         # tb: thunderbird-l10n hr/mail/chrome/messenger/
         tb=("Proslijeđena poruka", "Naslov", "Datum", "Šalje", "Prima"),
         text="Hvala, izgleda dobro. Sutra ću testirati."),
    dict(loc="nb-NO", ol_sep="Opprinnelig melding", ol_from="Fra",
         ol_sent="Sendt", ol_to="Til", ol_subj="Emne", ol_re="SV:",
         ol_date="5. september 2026 09:00",
         ol_src="seen: Norwegian Outlook mail (comp.lang.cobol, 1999) "
         "and other parsers' data",
         # tb: thunderbird-l10n nb-NO/mail/chrome/messenger/
         tb=("Videresendt melding", "Emne", "Dato", "Fra", "Til"),
         text="Takk, ser bra ut. Jeg tester i morgen."),
]

# The patch's text as its author sent it.  The tags naming the
# maintainer stand in a paragraph of their own: a paragraph with a
# Signed-off-by is a pasted commit message, skipped by trailers.c
# whoever's text it is, so it would prove nothing here.
ORIGINAL_BODY = """The timeout is in milliseconds, but the loop counts jiffies, so on
a slow device the probe gives up after a fraction of the time.

Acked-by: {mname} <{memail}>
Reviewed-by: {mname} <{memail}>

Signed-off-by: {aname} <{aemail}>
"""


def original():
    return ORIGINAL_BODY.format(aname=AUTHOR[0], aemail=AUTHOR[1],
                                mname=MAINT[0], memail=MAINT[1])


def outlook_body(loc, honest, rule=False):
    lines = [loc["text"], ""]
    if honest:
        lines += ["Acked-by: %s <%s>" % MAINT, ""]
    # plain-text Outlook writes the localised "-----Original
    # Message-----"; an HTML reply sent as text has a rule of 32
    # underscores in every language instead
    lines.append("_" * 32 if rule else "-----%s-----" % loc["ol_sep"])
    colon = "：" if loc.get("fullwidth") else ":"
    b = "*" if loc.get("bold") else ""
    # Outlook writes the sender with his address in brackets when the
    # directory knows it ("Name [mailto:a@b]"), else the name alone
    lines.append("%s%s%s%s %s [mailto:%s]" % (b, loc["ol_from"], colon, b,
                                              AUTHOR[0], AUTHOR[1]))
    lines.append("%s%s%s%s %s" % (b, loc["ol_sent"], colon, b,
                                  loc["ol_date"]))
    lines.append("%s%s%s%s %s" % (b, loc["ol_to"], colon, b, LIST))
    lines.append("%s%s%s%s [PATCH v2 1/3] %s" % (b, loc["ol_subj"], colon, b,
                                                 TITLE))
    lines.append("")
    return "\n".join(lines) + "\n" + original()


def tb_body(loc, honest):
    sep, subj, date, frm, to = loc["tb"]
    run = "-" * loc.get("tb_run", 8)
    lines = [loc["text"], ""]
    if honest:
        lines += ["Acked-by: %s <%s>" % MAINT, ""]
    lines.append("%s %s %s" % (run, sep, run))
    # mime.properties keeps the French space before the colon
    # ("Sujet : "); Thunderbird then writes a tab before the value
    sp = " " if loc.get("sp_colon") else ""
    lines.append("%s%s: \t[PATCH v2 1/3] %s" % (subj, sp, TITLE))
    lines.append("%s%s: \tTue, 1 Dec 2026 10:00:00 +0100" % (date, sp))
    lines.append("%s%s: \t%s <%s>" % (frm, sp, AUTHOR[0], AUTHOR[1]))
    lines.append("%s%s: \t%s" % (to, sp, LIST))
    lines.append("")
    lines.append("")
    return "\n".join(lines) + "\n" + original()


def encode_header(s):
    if all(ord(c) < 128 for c in s):
        return s
    return "=?UTF-8?B?%s?=" % base64.b64encode(s.encode()).decode()


def mail(loc, form, honest, n):
    if form in ("outlook", "outlook-rule"):
        body = outlook_body(loc, honest, form == "outlook-rule")
        subject = "%s [PATCH v2 1/3] %s" % (loc["ol_re"], TITLE)
    else:
        body = tb_body(loc, honest)
        subject = "Fwd: [PATCH v2 1/3] %s" % TITLE
    mid = "<%s-%s-%s@kernel.example.org>" % (
        loc["loc"], form, "honest" if honest else "attack")
    # Outlook sends quoted-printable, Thunderbird 8bit or base64: both
    # encodings are read, alternately
    if n % 2:
        cte = "base64"
        enc = base64.encodebytes(body.encode()).decode()
    else:
        cte = "quoted-printable"
        enc = quopri.encodestring(body.encode()).decode()
    head = [
        "From: %s <%s>" % MAINT,
        "To: %s" % LIST,
        "Subject: %s" % encode_header(subject),
        "Date: Mon, 7 Dec 2026 10:15:00 +0100",
        "Message-ID: %s" % mid,
        "In-Reply-To: %s" % PATCH_ID,
        "References: %s" % PATCH_ID,
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=UTF-8",
        "Content-Transfer-Encoding: %s" % cte,
    ]
    return ("\n".join(head) + "\n\n" + enc).encode()


def write_all(out):
    names = []
    n = 0
    for loc in LOCALES:
        for form in ("outlook", "outlook-rule", "tb"):
            for honest in (False, True):
                name = "%s-%s-%s.eml" % (loc["loc"], form,
                                         "honest" if honest else "attack")
                with open(os.path.join(out, name), "wb") as f:
                    f.write(mail(loc, form, honest, n))
                names.append(name)
                n += 1
    return names


def check(pb):
    failed = 0
    with tempfile.TemporaryDirectory(
            dir=os.environ.get("PB_TEST_TMP")) as tmp:
        names = write_all(tmp)
        paths = [os.path.join(tmp, n) for n in names]
        env = dict(os.environ)
        env.pop("PATCHBRIDGE_CONFIG", None)
        res = subprocess.run([pb, "parse"] + paths, capture_output=True,
                             env=env)
        if res.returncode != 0:
            sys.stderr.write(res.stderr.decode(errors="replace"))
            print("FAIL: %s parse exited %d" % (pb, res.returncode))
            return 1
        objs = [json.loads(l) for l in res.stdout.decode().splitlines()
                if l.strip()]
        if len(objs) != len(names):
            print("FAIL: %d mails, %d results" % (len(names), len(objs)))
            return 1
        for name, o in zip(names, objs):
            got = [(t.get("type"), t.get("name"), t.get("email"))
                   for t in o.get("trailers") or []]
            if "error" in o:
                print("FAIL %s: %s" % (name, o["error"]))
                failed += 1
            elif name.endswith("-attack.eml"):
                if got or o.get("own_trailers") or o.get("nak"):
                    print("FAIL %s: the original's trailers were read as "
                          "the maintainer's: %s" % (name, got))
                    failed += 1
            elif got != [("Acked-by", MAINT[0], MAINT[1])] or o.get("nak"):
                print("FAIL %s: the maintainer's own Acked-by above the "
                      "original: %s" % (name, got))
                failed += 1
        print("%d locales, %d mails, %d failed" % (len(LOCALES), len(names),
                                                  failed))
    return 1 if failed else 0


def main(argv):
    if len(argv) == 2 and argv[0] == "--out":
        os.makedirs(argv[1], exist_ok=True)
        write_all(argv[1])
        return 0
    if len(argv) == 2 and argv[0] == "--check":
        return check(argv[1])
    sys.stderr.write(
        "usage: gen-locale-originals.py --out DIR | --check PATCHBRIDGE\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
