package service

import (
	"maps"
	"slices"
	"strconv"
)

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func sortStrings(s []string) { slices.Sort(s) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
