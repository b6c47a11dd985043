-- POST /api/v1/track, one event per request, each with a distinct idempotent id (so every
-- request stores a row); the events as track_event.lua makes them.
dofile("bench/track_event.lua")
local counter = 0
request = function()
  counter = counter + 1
  return post_track(tracked_event(counter, "s" .. thread_no .. "-" .. counter))
end
