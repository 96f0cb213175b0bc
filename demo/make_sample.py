"""Writes demo/data: a small hand-written sample in the EleutherAI/hendrycks_math schema.

These problems were written for evalpack (they are not MATH problems); `make demo` uses them
when neither the hub nor a mirror (`EVALPACK_DATA_DIR`) is available.
Run: python demo/make_sample.py
"""

import json
from pathlib import Path

TYPES = {
    "algebra": "Algebra",
    "counting_and_probability": "Counting & Probability",
    "geometry": "Geometry",
    "intermediate_algebra": "Intermediate Algebra",
    "number_theory": "Number Theory",
    "prealgebra": "Prealgebra",
    "precalculus": "Precalculus",
}

PROBLEMS = {
    "algebra": [
        (
            "Level 1",
            "Solve for $x$: $3x + 7 = 22$.",
            "Subtracting 7 from both sides gives $3x = 15$, so $x = \\boxed{5}$.",
        ),
        (
            "Level 2",
            "What is the sum of the roots of $x^2 - 9x + 14 = 0$?",
            "The roots are $2$ and $7$, whose sum is $\\boxed{9}$.",
        ),
        (
            "Level 3",
            "Find the domain of $f(x) = \\sqrt{x - 4}$.",
            "We need $x - 4 \\ge 0$, so the domain is $\\boxed{[4,\\infty)}$.",
        ),
    ],
    "counting_and_probability": [
        (
            "Level 1",
            "In how many ways can 4 different books be arranged on a shelf?",
            "There are $4! = \\boxed{24}$ arrangements.",
        ),
        (
            "Level 2",
            "A fair coin is flipped twice. What is the probability of two heads?",
            (
                "Each flip is heads with probability $\\frac12$, so the answer is "
                "$\\frac12\\cdot\\frac12 = \\boxed{\\frac{1}{4}}$."
            ),
        ),
    ],
    "geometry": [
        (
            "Level 1",
            "A rectangle has length 8 and width 5. What is its area?",
            "The area is $8 \\cdot 5 = \\boxed{40}$.",
        ),
        (
            "Level 2",
            "What is the sum, in degrees, of the interior angles of a pentagon?",
            "The sum is $180(5-2) = \\boxed{540}$ degrees.",
        ),
    ],
    "intermediate_algebra": [
        (
            "Level 2",
            "Find the remainder when $x^3 + 2x + 1$ is divided by $x - 1$.",
            "By the remainder theorem the remainder is $1 + 2 + 1 = \\boxed{4}$.",
        ),
        (
            "Level 3",
            "Compute $\\log_2 64 - \\log_3 9$.",
            "We have $\\log_2 64 = 6$ and $\\log_3 9 = 2$, so the answer is $\\boxed{4}$.",
        ),
    ],
    "number_theory": [
        (
            "Level 1",
            "What is the greatest common divisor of 84 and 126?",
            (
                "Since $84 = 2^2\\cdot 3\\cdot 7$ and $126 = 2\\cdot 3^2\\cdot 7$, the gcd is "
                "$2\\cdot 3\\cdot 7 = \\boxed{42}$."
            ),
        ),
        (
            "Level 2",
            "What is the remainder when $2^{10}$ is divided by 7?",
            "Since $2^3 = 8 \\equiv 1 \\pmod 7$, $2^{10} = (2^3)^3\\cdot 2 \\equiv \\boxed{2}$.",
        ),
    ],
    "prealgebra": [
        ("Level 1", "What is $15\\%$ of 80?", "$15\\%$ of 80 is $0.15 \\cdot 80 = \\boxed{12}$."),
        (
            "Level 2",
            "Simplify $\\frac{18}{24}$.",
            "Dividing numerator and denominator by 6 gives $\\boxed{\\frac{3}{4}}$.",
        ),
    ],
    "precalculus": [
        (
            "Level 1",
            "Compute $\\cos 0 + \\sin \\frac{\\pi}{2}$.",
            "We have $\\cos 0 = 1$ and $\\sin\\frac{\\pi}{2} = 1$, so the sum is $\\boxed{2}$.",
        ),
        (
            "Level 2",
            ("Compute the determinant of $\\begin{pmatrix} 2 & 1 \\\\ 3 & 4 \\end{pmatrix}$."),
            "The determinant is $2\\cdot 4 - 1\\cdot 3 = \\boxed{5}$.",
        ),
    ],
}


def main() -> None:
    root = Path(__file__).parent / "data" / "EleutherAI__hendrycks_math"
    for subject, rows in PROBLEMS.items():
        folder = root / subject
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "test.jsonl", "w", encoding="utf-8") as fh:
            for level, problem, solution in rows:
                record = {
                    "problem": problem,
                    "level": level,
                    "type": TYPES[subject],
                    "solution": solution,
                }
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
