-- wrk script: sends N requests back to back per write (HTTP pipelining),
-- as TechEmpower's plaintext test does. Usage: wrk ... -s pipeline.lua URL -- 16
init = function(args)
   local depth = tonumber(args[1]) or 16
   local requests = {}
   for i = 1, depth do
      requests[i] = wrk.format(nil)
   end
   pipelined = table.concat(requests)
end

request = function()
   return pipelined
end
