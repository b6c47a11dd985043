-- Shared by create_event.lua and post_project.lua (run from the repository's root, as
-- common.sh does): numbered_post(path, header, body_of) makes request n a POST of the JSON
-- body_of(n) to path, passing on the header of that name that wrk was given.
function numbered_post(path, header, body_of)
  local counter = 0
  request = function()
    counter = counter + 1
    return wrk.format("POST", path, {["Content-Type"] = "application/json", [header] = wrk.headers[header]}, body_of(counter))
  end
end
