// Package importrules holds the tests of the module's layering, as
// pebble's TestForbiddenImports: the packages spider authors build on
// (spider, pipeline, settings) never depend on the engine's packages or
// the storage and browser backends; the engine links no backend (no
// browser driver, no Pebble, no Redis client) unless the program imports
// one; and the development tools and test servers (devtools/) are linked
// into no library package. The package has no code of its own.
package importrules
