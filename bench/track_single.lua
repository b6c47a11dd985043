-- POST /api/v1/track, one event per request, each with a distinct idempotent id (so every
-- request stores a row). Customers cycle through 100,000 addresses; every third event is a
-- login with a session duration, the others feature_used with one of 8 features.
thread_no = 0
local threads = 0
setup = function(thread)
  thread:set("thread_no", threads)
  threads = threads + 1
end
local counter = 0
request = function()
  counter = counter + 1
  local n = counter
  local c = n % 100000
  local event
  if n % 3 == 0 then
    event = '"event":"login","properties":{"duration_seconds":' .. (30 + n % 600) .. '}'
  else
    event = '"event":"feature_used","properties":{"feature":"f' .. (n % 8) .. '"}'
  end
  local body = '{"id":"s' .. thread_no .. '-' .. n .. '",' .. event .. ',"customer_email":"u' .. c .. '@example.com"}'
  return wrk.format("POST", "/api/v1/track",
    {["Content-Type"] = "application/json", ["X-API-Key"] = wrk.headers["X-API-Key"]}, body)
end
