"""The UI plane's shared library: component contracts, catalogs and frozen catalog slices."""
