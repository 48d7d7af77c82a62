"""Every text a visitor reads, in English, one module per topic (the prefix of its keys);
explorer/locales/__init__.py assembles them and checks them against zh/."""
