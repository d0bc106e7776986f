#!/usr/bin/python3
"""smtp_capture.py DIR [--no-auth] [--delay-dot S]: a one-connection SMTP
server that records what a client really sends.

It listens on 127.0.0.1, an ephemeral port, writes the port to DIR/port
once it listens, serves one connection and writes:

  DIR/auth   the SASL PLAIN or LOGIN credentials as "user\\npassword\\n"
  DIR/wire   the DATA section exactly as it came off the wire, up to and
             including the final ".\\r\\n"
  DIR/mail   MAIL FROM and RCPT TO lines

It offers AUTH PLAIN LOGIN (unless --no-auth) and accepts any
credentials, so the test decides what was right.  With --delay-dot it
waits S seconds before it answers the end of data.  smtp-sink cannot do
this: it answers AUTH with 250, un-stuffs dots before dumping, and its
-W .:S delays now the end of data, now the DATA command.
"""
import base64
import os
import socket
import sys
import time


def main():
    out = sys.argv[1]
    offer_auth = "--no-auth" not in sys.argv[2:]
    delay_dot = 0.0
    if "--delay-dot" in sys.argv[2:]:
        delay_dot = float(sys.argv[sys.argv.index("--delay-dot") + 1])
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(30)
    with open(os.path.join(out, "port.tmp"), "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
    conn, _ = srv.accept()
    conn.settimeout(30)
    rf = conn.makefile("rb")

    def say(line):
        conn.sendall(line.encode() + b"\r\n")

    def readline():
        line = rf.readline(4096)
        if not line:
            raise EOFError
        return line

    say("220 capture ESMTP")
    envelope = []
    try:
        while True:
            line = readline()
            verb = line[:4].upper()
            if verb in (b"EHLO", b"HELO"):
                say("250-capture")
                if offer_auth:
                    say("250-AUTH PLAIN LOGIN")
                say("250 8BITMIME")
            elif verb == b"AUTH":
                words = line.split()
                mech = words[1].upper()
                if mech == b"PLAIN":
                    if len(words) > 2:
                        resp = words[2]
                    else:
                        say("334 ")
                        resp = readline().strip()
                    _, user, pw = base64.b64decode(resp).split(b"\0")
                else:
                    say("334 VXNlcm5hbWU6")
                    user = base64.b64decode(readline().strip())
                    say("334 UGFzc3dvcmQ6")
                    pw = base64.b64decode(readline().strip())
                with open(os.path.join(out, "auth"), "wb") as f:
                    f.write(user + b"\n" + pw + b"\n")
                say("235 2.7.0 Authentication successful")
            elif verb in (b"MAIL", b"RCPT"):
                envelope.append(line)
                say("250 2.1.0 Ok")
            elif verb == b"DATA":
                say("354 End data with <CR><LF>.<CR><LF>")
                raw = b""
                while not raw.endswith(b"\r\n.\r\n"):
                    raw += readline()
                with open(os.path.join(out, "wire"), "wb") as f:
                    f.write(raw)
                time.sleep(delay_dot)
                say("250 2.0.0 Ok: queued as CAPTURE1")
            elif verb == b"QUIT":
                say("221 2.0.0 Bye")
                break
            else:
                say("502 5.5.2 Error: command not recognized")
    except (EOFError, OSError):
        pass
    with open(os.path.join(out, "mail"), "wb") as f:
        f.write(b"".join(envelope))


if __name__ == "__main__":
    main()
