-- Shared by track_single.lua and track_batch.lua (run from the repository's root, as
-- common.sh does): each wrk thread numbers itself, so ids stay distinct across threads, and
-- tracked_event(n, id) is event n's JSON. Customers cycle through 100,000 addresses; every
-- third event is a login with a session duration, the others feature_used with one of 8
-- features.
thread_no = 0
local threads = 0
setup = function(thread)
  thread:set("thread_no", threads)
  threads = threads + 1
end

function tracked_event(n, id)
  local event
  if n % 3 == 0 then
    event = '"event":"login","properties":{"duration_seconds":' .. (30 + n % 600) .. '}'
  else
    event = '"event":"feature_used","properties":{"feature":"f' .. (n % 8) .. '"}'
  end
  return '{"id":"' .. id .. '",' .. event .. ',"customer_email":"u' .. (n % 100000) .. '@example.com"}'
end

-- post_track(body): the request wrk sends.
function post_track(body)
  return wrk.format("POST", "/api/v1/track",
    {["Content-Type"] = "application/json", ["X-API-Key"] = wrk.headers["X-API-Key"]}, body)
end
