//! Forecasting a monthly series with exponential smoothing (augurs ETS): the model with the
//! best AICc among the non-seasonal ETS models when the history allows it (9 months or
//! more), else simple exponential smoothing (ANN) with its smoothing parameter estimated (4
//! months or more), else, for 3 months, where augurs refuses to fit, the same model with the
//! parameter fixed at 0.5 and the first value as the initial level. Intervals are 80 %; money cannot be negative, so
//! values and bounds are clamped at 0 and rounded to whole cents.

use augurs::ets::AutoETS;
use augurs::ets::model::{ErrorComponent, ModelType, SeasonalComponent, TrendComponent, Unfit};
use augurs::{Fit, Forecast, Predict};

/// The name of simple exponential smoothing.
const SIMPLE: &str = "ETS(A,N,N)";

/// The coverage of every forecast interval.
pub const LEVEL: f64 = 0.8;

/// One forecast value and the 80 % interval holding it, in cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    pub value: i64,
    pub lower: i64,
    pub upper: i64,
}

impl Band {
    /// A value with no spread around it.
    pub fn flat(value: i64) -> Self {
        Band {
            value,
            lower: value,
            upper: value,
        }
    }
}

/// The next `horizon` values of `history` and the name of the model that made them
/// (`ETS(A,N,N)` and the like).
pub fn forecast(history: &[f64], horizon: usize) -> Result<(String, Vec<Band>), String> {
    // A constant history leaves nothing to estimate (the optimiser meets a zero variance):
    // simple smoothing forecasts the constant, with no spread.
    if let Some(&first) = history.first()
        && history.iter().all(|&x| x == first)
    {
        let value = first.max(0.0).round() as i64;
        return Ok((SIMPLE.into(), vec![Band::flat(value); horizon]));
    }
    let (model, forecast) = fit_and_predict(history, horizon)?;
    let intervals = forecast
        .intervals
        .ok_or("the model gave no prediction intervals")?;
    let cents = |x: f64| {
        if x.is_finite() {
            x.max(0.0).round() as i64
        } else {
            0
        }
    };
    let bands = (0..horizon)
        .map(|i| {
            let value = cents(forecast.point[i]);
            Band {
                value,
                lower: cents(intervals.lower[i]).min(value),
                upper: cents(intervals.upper[i]).max(value),
            }
        })
        .collect();
    Ok((model, bands))
}

fn fit_and_predict(y: &[f64], horizon: usize) -> Result<(String, Forecast), String> {
    let name = |t: ModelType| {
        let s = t.to_string();
        let parts: Vec<String> = s.chars().map(String::from).collect();
        format!("ETS({})", parts.join(","))
    };
    if let Ok(fitted) = AutoETS::non_seasonal().fit(y)
        && let Ok(forecast) = fitted.predict(horizon, LEVEL)
    {
        return Ok((name(fitted.model().model_type()), forecast));
    }
    let simple = ModelType {
        error: ErrorComponent::Additive,
        trend: TrendComponent::None,
        season: SeasonalComponent::None,
    };
    let forecast = match Unfit::new(simple).fit(y) {
        Ok(model) => model.predict(horizon, LEVEL).map_err(|e| e.to_string())?,
        Err(_) => fixed_simple_smoothing(y, horizon)?,
    };
    Ok((SIMPLE.into(), forecast))
}

/// ETS(A,N,N) with α = 0.5 and ℓ₀ = y₀: forecasts ℓₙ, with variance σ²(1 + (h − 1)α²) at step h,
/// σ² being the mean squared one-step error.
fn fixed_simple_smoothing(y: &[f64], horizon: usize) -> Result<Forecast, String> {
    const ALPHA: f64 = 0.5;
    /// The standard normal quantile of 0.9: the half-width of an 80 % interval in σ.
    const Z80: f64 = 1.281_551_565_544_600_4;
    let (&first, rest) = y.split_first().ok_or("no history")?;
    if rest.is_empty() {
        return Err("one value is no history".into());
    }
    let mut level = first;
    let mut squared_errors = 0.0;
    for &x in rest {
        let error = x - level;
        squared_errors += error * error;
        level += ALPHA * error;
    }
    let sigma2 = squared_errors / rest.len() as f64;
    let mut forecast = Forecast::with_capacity_and_level(horizon, LEVEL);
    let intervals = forecast.intervals.as_mut().ok_or("no intervals")?;
    for h in 1..=horizon {
        let half = Z80 * (sigma2 * (1.0 + (h as f64 - 1.0) * ALPHA * ALPHA)).sqrt();
        forecast.point.push(level);
        intervals.lower.push(level - half);
        intervals.upper.push(level + half);
    }
    Ok(forecast)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(bands: &[Band]) -> bool {
        bands
            .iter()
            .all(|b| b.lower <= b.value && b.value <= b.upper && b.lower >= 0)
    }

    #[test]
    fn a_long_trending_history_gets_a_fitted_ets_model() {
        let history: Vec<f64> = (0..24)
            .map(|i| 10_000.0 + 500.0 * i as f64 + (i % 3) as f64 * 300.0)
            .collect();
        let (model, bands) = forecast(&history, 3).unwrap();
        assert!(model.starts_with("ETS("), "{model}");
        assert_eq!(bands.len(), 3);
        assert!(holds(&bands));
        assert!(bands[0].value > 20_000, "{bands:?}");
        assert!(
            bands[0].upper > bands[0].lower,
            "a noisy history has a spread"
        );
    }

    #[test]
    fn short_histories_fall_back_to_simple_smoothing() {
        for history in [
            vec![1000.0, 1200.0, 900.0],
            vec![1000.0, 1200.0, 900.0, 1100.0, 1050.0],
        ] {
            let (model, bands) = forecast(&history, 2).unwrap();
            assert_eq!(model, "ETS(A,N,N)");
            assert!(holds(&bands), "{bands:?}");
            assert!((800..=1300).contains(&bands[0].value), "{bands:?}");
        }
    }

    #[test]
    fn three_months_smooth_by_hand() {
        // ℓ: 1000 → 1100 → 1000; errors 200, −200: σ² = 40 000, σ = 200; h = 1: ± 1.2816 σ.
        let (_, bands) = forecast(&[1000.0, 1200.0, 900.0], 2).unwrap();
        assert_eq!(
            bands[0],
            Band {
                value: 1000,
                lower: 744,
                upper: 1256
            }
        );
        // h = 2: σ √1.25 = 223.6.
        assert_eq!((bands[1].lower, bands[1].upper), (713, 1287));
    }

    #[test]
    fn flat_and_zero_histories_stay_in_range() {
        for history in [vec![0.0; 12], vec![500.0; 5]] {
            let (_, bands) = forecast(&history, 4).unwrap();
            assert!(holds(&bands), "{bands:?}");
        }
    }
}
