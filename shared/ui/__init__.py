"""The UI plane's shared library: component contracts, catalogs, frozen catalog slices and the surface journal as
clients read it."""
