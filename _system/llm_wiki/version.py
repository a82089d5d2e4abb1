"""The version, in a module of its own: the site and the adapters name it without loading the
package's front door."""

__version__ = "0.1.0"
