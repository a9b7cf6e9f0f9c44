-- Run by test_lsp_neovim.py inside `nvim --headless`, with the .adl file already open:
-- start `adl lsp` for the buffer (the calls work from Neovim 0.7 on), wait for the
-- diagnostics it publishes, write them as JSON to $ADL_NVIM_OUT, and quit.
local python = os.getenv("ADL_NVIM_PYTHON")
local out = os.getenv("ADL_NVIM_OUT")
local client = vim.lsp.start_client({
  name = "adl",
  cmd = { python, "-m", "adl", "lsp" },
  root_dir = vim.fn.expand("%:p:h"),
})
vim.lsp.buf_attach_client(0, client)
local got = vim.wait(120000, function()
  return #vim.diagnostic.get(0) > 0
end, 50)
local found = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(found, {
    lnum = d.lnum,
    col = d.col,
    end_lnum = d.end_lnum,
    end_col = d.end_col,
    severity = d.severity,
    message = d.message,
  })
end
vim.fn.writefile({ vim.fn.json_encode({ waited = got, diagnostics = found }) }, out)
vim.lsp.stop_client(client)
vim.cmd("qa!")
