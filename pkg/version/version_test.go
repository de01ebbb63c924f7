package version

import "testing"

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0.1.0", "0.2.0", -1},
		{"1.1.0", "1.0.0", 1},
		{"0.4.0", "0.4.0", 0},
		{"1", "1.0.0", 0},
		{"0.10.0", "0.9.0", 1},
	}
	for _, tt := range tests {
		got, err := Compare(tt.a, tt.b)
		if err != nil || got != tt.want {
			t.Errorf("Compare(%q, %q) = %d, %v, want %d", tt.a, tt.b, got, err, tt.want)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, v := range []string{"", "a.b", "1.2.3.4", "1..0", "-1.0.0"} {
		if _, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) = nil error, want an error", v)
		}
	}
}

func TestAtLeastAndSupported(t *testing.T) {
	if !AtLeast("1.1.0", MinGC) || AtLeast("1.0.0", MinGC) || AtLeast("garbage", MinCheck) {
		t.Error("AtLeast gives wrong answers")
	}
	if Supported("0.3.2") || !Supported("0.3.1") {
		t.Error("Supported gives wrong answers")
	}
	for _, v := range All {
		if _, err := FamilyOf(v); err != nil {
			t.Errorf("FamilyOf(%q) = %v", v, err)
		}
	}
	if _, err := FamilyOf("2.0.0"); err == nil {
		t.Error("FamilyOf(2.0.0) = nil error")
	}
}
