"""The sub-commands' command lines and what they print: one module per command, each with
`parser()` and `run(parser, argv)`, thin users of the client session, the recording package
and the TUI. `dltui.cli` lists them and says their errors."""
