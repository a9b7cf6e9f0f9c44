"""The ADL grammar (adl.lark), shipped inside the wheel as the package ``adl.grammar``."""
