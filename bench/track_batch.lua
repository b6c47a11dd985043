-- POST /api/v1/track with {"events": [100 events]}, each event with a distinct idempotent id.
-- Request k covers the 100 customers 100k .. 100k+99 (mod 100,000), so concurrent batches
-- write different customers' rows, as batches from many SDK clients would.
thread_no = 0
local threads = 0
setup = function(thread)
  thread:set("thread_no", threads)
  threads = threads + 1
end
local counter = 0
request = function()
  counter = counter + 1
  local k = counter
  local parts = {}
  for i = 0, 99 do
    local n = k * 100 + i
    local c = n % 100000
    local event
    if i % 3 == 0 then
      event = '"event":"login","properties":{"duration_seconds":' .. (30 + n % 600) .. '}'
    else
      event = '"event":"feature_used","properties":{"feature":"f' .. (n % 8) .. '"}'
    end
    parts[#parts + 1] = '{"id":"b' .. thread_no .. '-' .. n .. '",' .. event .. ',"customer_email":"u' .. c .. '@example.com"}'
  end
  local body = '{"events":[' .. table.concat(parts, ",") .. ']}'
  return wrk.format("POST", "/api/v1/track",
    {["Content-Type"] = "application/json", ["X-API-Key"] = wrk.headers["X-API-Key"]}, body)
end
