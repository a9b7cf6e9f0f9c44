// The ADL extension: starts `adl lsp` (the setting adl.server.command) for .adl files and
// talks to it over stdio; highlighting comes from syntaxes/adl.tmLanguage.json.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace
    .getConfiguration("adl")
    .get("server.command", ["adl", "lsp"]);
  client = new LanguageClient(
    "adl",
    "ADL language server",
    { command, args },
    { documentSelector: [{ language: "adl" }] }
  );
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("adl.server.command")) {
        vscode.window.showInformationMessage("ADL: reload the window to use the new server command.");
      }
    })
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
