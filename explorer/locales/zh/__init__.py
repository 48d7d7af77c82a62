"""Every text a visitor reads, in Simplified Chinese (简体中文), one module per topic (the prefix
of its keys); explorer/locales/__init__.py assembles them and checks them against en/."""
