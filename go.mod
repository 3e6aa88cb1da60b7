module github.com/gocrawl/gocrawl

go 1.26.0

require (
	github.com/PuerkitoBio/goquery v1.14.0
	github.com/goccy/go-yaml v1.19.2
	github.com/rs/zerolog v1.35.1
	golang.org/x/net v0.62.0
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/andybalholm/cascadia v1.3.5 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
