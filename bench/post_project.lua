-- POST /projects with a distinct name per request (so slugs do not collide).
counter = 0
request = function()
  counter = counter + 1
  local body = '{"name":"Bench ' .. counter .. '","product_type":"SaaS"}'
  return wrk.format("POST", "/api/v1/projects", {["Content-Type"] = "application/json", ["Authorization"] = wrk.headers["Authorization"]}, body)
end
