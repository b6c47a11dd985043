-- POST /api/v1/track with {"events": [100 events]}, each event with a distinct idempotent id.
-- Request k covers the 100 customers 100k .. 100k+99 (mod 100,000), so concurrent batches
-- write different customers' rows, as batches from many SDK clients would.
dofile("bench/track_event.lua")
local counter = 0
request = function()
  counter = counter + 1
  local parts = {}
  for i = 0, 99 do
    local n = counter * 100 + i
    parts[#parts + 1] = tracked_event(n, "b" .. thread_no .. "-" .. n)
  end
  return post_track('{"events":[' .. table.concat(parts, ",") .. ']}')
end
