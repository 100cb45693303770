-- PUT distinct bodies: wrk -s put.lua URL -- PREFIX SIZE RANDOM_FILE [PATHS_FILE]
-- Each request goes to PREFIX/<thread>-<n> (PREFIX is percent-encoded already), or with PATHS_FILE to its
-- paths in turn (presigned S3 URLs: path and query, one a line; wrk cannot sign), with a body of SIZE bytes:
-- the bytes of RANDOM_FILE (SIZE random bytes), with a marker naming the request at the start of every
-- 8 KiB, so every block the store cuts (16 KiB at least) is new: each PUT uploads all of its bytes.
dofile(os.getenv("CASSTOR_WRK_DIR") .. "/report.lua")

local SPAN = 8192
local prefix, spans, counter, paths

function init(args)
  prefix = args[1]
  local size = tonumber(args[2])
  local file = assert(io.open(args[3], "rb"))
  local random = file:read("*a")
  file:close()
  assert(#random == size, "the random file must hold SIZE bytes")
  spans = {}
  for start = 1, size, SPAN do
    table.insert(spans, random:sub(start, math.min(start + SPAN - 1, size)))
  end
  counter = 0
  if args[4] then
    paths = {}
    for line in io.lines(args[4]) do
      table.insert(paths, line)
    end
  end
end

function request()
  counter = counter + 1
  local parts = {}
  for i, span in ipairs(spans) do
    local marker = string.format("%d-%d-%d|", tid, counter, i)
    parts[i] = (marker .. span):sub(1, #span)
  end
  local path = paths and paths[(counter - 1) % #paths + 1] or string.format("%s/%d-%d", prefix, tid, counter)
  return wrk.format("PUT", path, nil, table.concat(parts))
end
