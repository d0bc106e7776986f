-- A stop while an SMTP client is slow to send its message: MAIL FROM is
-- answered, then the client stays idle (stop.sh sends SIGTERM meanwhile
-- and expects the milter gone after its short envelope grace, not after
-- the whole drain).
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
mail_from(conn, "4STOPENV1")
mark()
mt.sleep(tonumber(os.getenv("MT_IDLE") or "15"))
mt.echo("stop_envelope: idle client done")
