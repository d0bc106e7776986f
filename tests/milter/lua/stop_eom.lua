-- A stop while an end-of-message callback hangs: the thread map is a
-- FIFO nobody writes to, so opening it blocks (as a stalled disk would).
-- The script only sends the reply; stop.sh checks how the milter ends.
dofile(os.getenv("MT_DIR") .. "/common.lua")
mt.set_timeout(60)
local conn = open()
mark()
send(conn, "4STOPEOM1", reply_headers("<mt-stop-eom@example.org>"),
	reply_body)
mt.echo("stop_eom: answered after all")
